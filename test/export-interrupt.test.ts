import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";

// Ctrl-C during `stet export -o`: the file is replaced atomically, so an interrupted export must
// leave the old file as it was and nothing beside it. It used to leave its temporary file
// (`out.jsonl.<pid>.tmp`, visible and never removed) on SIGINT and SIGTERM.

const N = 20_000;
const { project } = perTest();

/** An eval answering at once with a 4 KB output: its export is ~90 MB, long enough to stop. */
const EVAL = `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "wide",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "s" + i, input: "x".repeat(4000) + i, target: "y" })),
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
});
`;

/** The files beside the output whose names say they are a write of it under way. */
const temps = (dir: string) =>
  readdirSync(dir).filter((name) => name.includes("out.jsonl.") && name.endsWith(".tmp"));

describe("an interrupted stet export -o", () => {
  it("on SIGINT or SIGTERM leaves the old file as it was and no temporary file", async () => {
    const { dir } = project({ "eval.mjs": EVAL });
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const { runId } = JSON.parse(run.stdout) as { runId: string };
    writeFileSync(join(dir, "out.jsonl"), "the old export\n");
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      const { child, done } = startCli(["export", runId, "-o", "out.jsonl"], { cwd: dir });
      let exited = false;
      void done.then(() => (exited = true));
      // Stopped as soon as its temporary file exists, so it cannot finish before the signal.
      while (temps(dir).length === 0 && !exited) await new Promise((r) => setTimeout(r, 2));
      expect(exited, "the export finished before it could be interrupted").toBe(false);
      child.kill("SIGSTOP");
      child.kill(signal);
      child.kill("SIGCONT");
      expect(await done).toMatchObject({ code: null, signal });
      expect(readdirSync(dir).filter((name) => name.includes("out.jsonl."))).toEqual([]);
      expect(readFileSync(join(dir, "out.jsonl"), "utf8")).toBe("the old export\n");
    }
  }, 120_000);
});
