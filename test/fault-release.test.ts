import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest, rawAttempts, rawRun } from "./helpers/eval-project.js";

// A `stet run` process that fails of its own error (an exception thrown from a solver's timer,
// outside any sample, or a promise rejection nobody handles) used to die on the spot and leave
// its run `running` in the store under an owner that was gone. Now it stops, releases the run
// `interrupted` with the error as its note, prints the error and the resume command, and exits
// 1; the resume then executes what is left.

/** Six samples; with FAULT set, the third solver call makes the process fail outside the sample. */
const evalWith = (fault: string) => `
import { defineEval, scorers } from "stet";
let calls = 0;
export default defineEval({
  name: "faulty",
  dataset: Array.from({ length: 6 }, (_, i) => ({ id: "s" + i, input: String(i), target: String(i) })),
  solver: async (sample, ctx) => {
    if (process.env.FAULT && ++calls === 3) {
      ${fault}
    }
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, 100);
      ctx.signal.addEventListener("abort", () => { clearTimeout(timer); reject(ctx.signal.reason); });
    });
    return String(sample.input);
  },
  scorers: [scorers.exact()],
  concurrency: 1,
});
`;

const { project } = perTest();

describe("a run whose process fails of its own error", () => {
  it.each([
    [
      "an exception thrown from a timer",
      'setTimeout(() => { throw new Error("boom outside the sample"); }, 0);',
      "boom outside the sample",
    ],
    [
      "a promise rejection nobody handles",
      'Promise.reject(new Error("stray rejection"));',
      "stray rejection",
    ],
  ])("%s: the run is left interrupted, not running", async (_, fault, message) => {
    const p = project({ "eval.mjs": evalWith(fault) });
    const result = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { FAULT: "1" } });
    expect(result.code, result.stderr).toBe(1);
    const runId = /run (r_\w+)/.exec(result.stdout)![1]!;
    expect(result.stderr).toContain(`stet: unexpected error: Error: ${message}`);
    expect(result.stderr).toContain(
      `run ${runId} is interrupted; resume with: stet resume ${runId}`,
    );

    const db = join(p.dir, ".stet/stet.db");
    expect(rawRun(db, runId)).toMatchObject({
      status: "interrupted",
      note: `stopped by an unexpected error in this process: ${message}`,
      owner_token: null,
    });
    const scored = rawAttempts(db).filter((a) => a.status === "scored").length;
    expect(scored).toBeGreaterThanOrEqual(2);
    expect(scored).toBeLessThan(6);

    const resumed = await runCli(["resume", runId], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(rawRun(db, runId)).toMatchObject({ status: "completed" });
    expect(rawAttempts(db).filter((a) => a.status === "scored")).toHaveLength(6);
  });
});
