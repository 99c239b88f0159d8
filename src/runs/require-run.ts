import { StetError } from "../core/errors.js";
import type { Run } from "../core/types.js";
import type { Store } from "../store/types.js";

/**
 * The run with this id, or the one "unknown run" error (`E_RUN_NOT_FOUND`, exit 1, HTTP 404).
 *
 * @example const run = await requireRun(store, "r_abc");
 */
export async function requireRun(store: Store, runId: string): Promise<Run> {
  const run = await store.runs.get(runId);
  if (!run) throw unknownRun(store, runId);
  return run;
}

/** The error for a run id the store does not have; its message names the store. */
export function unknownRun(store: Store, runId: string): StetError {
  return new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`, {
    details: { runId },
  });
}
