import { fileURLToPath } from "node:url";
import { defineEval, scorers, solvers } from "stet";

/**
 * A self-contained eval: no API key, no network. The system under test is calc.mjs, a small
 * program that evaluates arithmetic left to right; the eval finds where that is wrong.
 *
 *   npx stet run examples/arithmetic/eval.ts
 */
export default defineEval({
  name: "arithmetic",
  dataset: "./arithmetic.jsonl",
  solver: solvers.command({
    command: process.execPath,
    args: [fileURLToPath(new URL("./calc.mjs", import.meta.url))],
  }),
  scorers: [scorers.exact(), scorers.numeric({ tolerance: 1e-9 })],
  concurrency: 4,
  timeoutMs: 10_000,
});
