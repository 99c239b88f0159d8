import { existsSync, readFileSync, writeFileSync } from "node:fs";
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
  const first = await runEval({ store, ...prepared, ...stopAfter(stopAt) });
  expect(first.status).toBe("interrupted");
  return first.runId;
}

/**
 * A run's `signal` and `onEvent` that stop it gracefully once `n` attempts are committed.
 *
 * @example const killed = await resumeRun({ store, runId, ...stopAfter(4) });
 */
export function stopAfter(n: number): {
  signal: AbortSignal;
  onEvent: (e: { type: string }) => void;
} {
  const stop = new AbortController();
  let committed = 0;
  const onEvent = (e: { type: string }) => {
    if (e.type === "attempt-committed" && ++committed === n) stop.abort();
  };
  return { signal: stop.signal, onEvent };
}

/** Row `i` of a paged test's dataset: sample `s<i>`, input `i`, target `2i` (as text). */
export const pagedRow = (i: number) =>
  JSON.stringify({ id: `s${i}`, input: i, target: String(i * 2) });

/** The first `n` rows (`pagedRow`) as a JSONL file's text. */
export const pagedRows = (n: number) =>
  Array.from({ length: n }, (_, i) => pagedRow(i)).join("\n") + "\n";

/**
 * An eval of a paged test's dataset (`data.jsonl`) whose solver doubles its input in a journaled
 * step, waits `delayMs` (when given; then also while the file `hold` is there), and fails every
 * 13th sample while the file `fail` is there.
 */
export function failingEval(name: string, concurrency = 1, delayMs?: number): string {
  const wait =
    delayMs === undefined
      ? ""
      : `\n    do await new Promise((resolve) => setTimeout(resolve, ${delayMs}));` +
        `\n    while (existsSync(new URL("./hold", import.meta.url)));`;
  return `import { existsSync } from "node:fs";
import { defineEval, scorers } from "stet";
const fail = new URL("./fail", import.meta.url);
export default defineEval({
  name: "${name}",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) => {
    const doubled = await ctx.step("double", { n: sample.input }, () => sample.input * 2);${wait}
    if (sample.input % 13 === 0 && existsSync(fail)) throw new Error("not yet");
    return { output: String(doubled), usage: { inputTokens: 3, outputTokens: 1, costUsd: 0.001 } };
  },
  scorers: [scorers.exact()],
  epochs: 2,
  retries: 0,
  concurrency: ${concurrency},
});
`;
}

/**
 * A run's attempts as two runs of the same eval may be compared: without ids and times (the
 * provenance, which names a source run, as `source` rewrites it).
 *
 * @example expect(await comparableAttempts(a, runA)).toEqual(await comparableAttempts(b, runB));
 */
export async function comparableAttempts(
  store: Store,
  runId: string,
  source: (provenance: string) => string = (p) => p,
) {
  return (await store.reads.listAttempts(runId)).map((a) => ({
    key: `${a.sampleId}#${a.epoch}`,
    attempt: a.attempt,
    status: a.status,
    output: a.output,
    scores: a.scores,
    error: a.error,
    fingerprint: a.fingerprint,
    usage: a.usage,
    provenance: source(JSON.stringify(a.provenance ?? null)),
  }));
}

/**
 * The keys an eval's solver logged to `dir/calls.log` (`sample#epoch`, a line a call) since the
 * last look, sorted; the log is emptied.
 */
export function callsOf(dir: string): string[] {
  const log = join(dir, "calls.log");
  const lines = existsSync(log) ? readFileSync(log, "utf8").split("\n") : [];
  writeFileSync(log, "");
  return lines.filter(Boolean).sort();
}
