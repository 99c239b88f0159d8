import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Polls `probe` until it holds; fails after `timeoutMs` naming `what`: wait for a state, never a
 * fixed sleep.
 *
 * @example await until(() => rawAttempts(db).length > 0, "a committed attempt");
 */
export async function until(
  probe: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The lines a counting solver appended to `<dir>/calls.log`: one per solver call. */
export function solverCalls(dir: string): string[] {
  const log = join(dir, "calls.log");
  return existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : [];
}
