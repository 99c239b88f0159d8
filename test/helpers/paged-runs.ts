import { join } from "node:path";
import { expect } from "vitest";
import { prepareStart, runEval } from "../../src/runs/start-run.js";
import type { Store } from "../../src/store/types.js";

/**
 * Starts `dir/eval.mjs` paged (its dataset file read a page at a time, whatever its size) and
 * stops it gracefully once `stopAt` attempts are committed; the interrupted run's id.
 *
 * @example const runId = await interruptedPagedRun(store, p.dir, 700);
 */
export async function interruptedPagedRun(
  store: Store,
  dir: string,
  stopAt: number,
): Promise<string> {
  const prepared = await prepareStart({ eval: join(dir, "eval.mjs"), paged: { minBytes: 0 } });
  expect(prepared.eval.pages).toBeDefined();
  expect(prepared.eval.datasetStamp).toBeDefined();
  const stop = new AbortController();
  let committed = 0;
  const first = await runEval({
    store,
    ...prepared,
    signal: stop.signal,
    onEvent: (e) => {
      if (e.type === "attempt-committed" && ++committed === stopAt) stop.abort();
    },
  });
  expect(first.status).toBe("interrupted");
  return first.runId;
}
