import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { runCli, STET_BIN } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";

// An export read by a process slower than stet: stdout to a pipe or socket is asynchronous in Node,
// and the CLI leaves with `process.exit`, which dropped what stdout still held when the reader was
// behind: the export's last rows (seen in test/crash.test.ts: 131 of 150 lines). Whether a given
// export meets a full pipe at its end is a matter of timing, so the export is read three times.

const N = 2_000;
const { project } = perTest();

/** An eval answering at once with a long output, so its export is megabytes. */
const EVAL = `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "wide",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "s" + String(i).padStart(4, "0"), input: "x".repeat(400) + i, target: "y" })),
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
});
`;

/** Runs `stet <args>`, reading its stdout slowly: a pause of 20 ms after every chunk. */
function readSlowly(args: string[], cwd: string): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, [STET_BIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), 20);
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout })));
}

describe("output to a slow reader", () => {
  it("stet export --format jsonl reaches a reader slower than stet whole", async () => {
    const { dir } = project({ "eval.mjs": EVAL });
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const { runId } = JSON.parse(run.stdout) as { runId: string };
    for (let i = 0; i < 3; i++) {
      const exported = await readSlowly(["export", runId, "--format", "jsonl"], dir);
      expect(exported.code).toBe(0);
      const ids = exported.stdout
        .trimEnd()
        .split("\n")
        .map((line) => (JSON.parse(line) as { sampleId: string }).sampleId);
      expect(ids).toHaveLength(N);
      expect(ids.at(-1)).toBe(`s${N - 1}`);
    }
  }, 120_000);
});
