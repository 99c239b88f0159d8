import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isPartial } from "../src/evalport/is-partial.js";
import type { EvalPortResult, ResultSetDocument } from "../src/evalport/result-set-types.js";
import { validateFile } from "../src/evalport/validate-file.js";
import { runCli, startCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts } from "./helpers/eval-project.js";

// Enough work (N × EPOCHS = 400 keys) that three kills, each at most 30 lines after the last
// one (plus what is in flight), all land before the end.
const N = 200;
const EPOCHS = 2;

/** A function solver that sleeps a few ms. */
const EVAL = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "streamed",
  dataset: "./data.jsonl",
  solver: async (sample) => {
    await new Promise((r) => setTimeout(r, 4 + Math.random() * 8));
    return String(sample.input).replace("question", "answer");
  },
  scorers: [scorers.exact()],
  concurrency: 4,
  epochs: ${EPOCHS},
});
`;

const projects: { cleanup: () => void }[] = [];
afterEach(() => projects.splice(0).forEach((p) => p.cleanup()));
function project() {
  const p = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(N) });
  projects.push(p);
  return p;
}

const parseLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as EvalPortResult);
/** The number of whole lines in a file, 0 when it is not there yet. */
const wholeLines = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").length - 1 : 0;
const keyOf = (r: EvalPortResult) => `${r.test_case_id}#${r.attempt ?? 1}`;
const byKey = (a: EvalPortResult, b: EvalPortResult) => (keyOf(a) < keyOf(b) ? -1 : 1);

describe("stet run --output (real processes)", () => {
  it("SIGKILLed at random points: every line is a stored attempt; after resume, each key once (resume remembers --output)", async () => {
    const p = project();
    const out = join(p.dir, "out.jsonl");
    let runId = "";
    const linesAtKills: number[] = [];
    for (let kill = 0; kill < 3; kill++) {
      const args = ["--output", "out.jsonl"];
      const cli =
        kill === 0
          ? startCli(["run", "eval.mjs", ...args], { cwd: p.dir })
          : // The run remembers its --output: the second resume does not name it.
            startCli(["resume", runId, ...(kill === 1 ? args : [])], { cwd: p.dir });
      runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
      // Kill once this process has streamed a random number of new lines (at least one).
      const target = (linesAtKills.at(-1) ?? 0) + 1 + Math.floor(Math.random() * 30);
      const deadline = Date.now() + 30_000;
      while (wholeLines(out) < target) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${target} lines`);
        await new Promise((r) => setTimeout(r, 5));
      }
      cli.child.kill("SIGKILL");
      expect((await cli.done).signal).toBe("SIGKILL");

      // The file may end in a torn line (the next resume cuts it off); every whole line
      // parses and is the stored, scored attempt it names.
      const text = existsSync(out) ? readFileSync(out, "utf8") : "";
      const lines = parseLines(text.slice(0, text.lastIndexOf("\n") + 1));
      const stored = new Map(rawAttempts(p.db).map((a) => [`${a.sample_id}#${a.epoch}`, a]));
      for (const line of lines) {
        const row = stored.get(keyOf(line));
        expect(row, keyOf(line)).toBeDefined();
        expect(row!.status).toBe("scored");
        expect((line.metadata!.stet as { attempt: number }).attempt).toBe(row!.attempt);
        expect(JSON.parse(String(row!.output))).toBe(line.actual_output);
      }
      expect(new Set(lines.map(keyOf)).size).toBe(lines.length);
      linesAtKills.push(lines.length);
    }
    // The kills landed mid-stream: some lines were written, not all of them.
    expect(Math.max(...linesAtKills)).toBeGreaterThan(0);
    expect(rawAttempts(p.db).length).toBeLessThan(N * EPOCHS);

    // From another directory, without --output: the remembered path is absolute.
    const final = await runCli(["resume", runId, "--store", p.db], { cwd: tmpdir() });
    expect(final.code, final.stderr).toBe(0);
    expect(final.stdout).toContain("out.json");
    const lines = parseLines(readFileSync(out, "utf8"));
    expect(lines).toHaveLength(N * EPOCHS);
    expect(new Set(lines.map(keyOf)).size).toBe(N * EPOCHS);

    const resultSet = join(p.dir, "out.json");
    expect((await validateFile(resultSet)).errors).toEqual([]);
    const doc = JSON.parse(readFileSync(resultSet, "utf8")) as ResultSetDocument;
    expect(isPartial(doc)).toBe(false);
    expect(doc.results).toHaveLength(N * EPOCHS);
    expect([...lines].sort(byKey)).toEqual([...doc.results].sort(byKey));

    // The same document from export; merging the stream into it changes nothing.
    const exported = await runCli(["export", runId, "--format", "resultset", "-o", "export.json"], {
      cwd: p.dir,
    });
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(p.dir, "export.json"), "utf8"))).toEqual(doc);
    const merged = await runCli(["merge", "out.jsonl", "out.json", "-o", "merged.json"], {
      cwd: p.dir,
    });
    expect(merged.code, merged.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(p.dir, "merged.json"), "utf8"))).toEqual(doc);
  });
});

describe("stet merge and export (CLI)", () => {
  it("refuses conflicts and invalid inputs with exit 1, writing nothing", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs", "--limit", "3", "--output", "a.json"], {
      cwd: p.dir,
    });
    expect(run.code, run.stderr).toBe(0);
    const doc = JSON.parse(readFileSync(join(p.dir, "a.json"), "utf8")) as ResultSetDocument;
    const changed = structuredClone(doc);
    changed.results[0]!.actual_output = "something else";
    delete changed.results[0]!.completed_at;
    changed.results[1]!.actual_output = "also else";
    writeFileSync(join(p.dir, "b.json"), JSON.stringify(changed));

    const refused = await runCli(["merge", "a.json", "b.json", "-o", "m.json"], { cwd: p.dir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/2 conflicting key/);
    expect(refused.stderr).toContain(`${doc.results[0]!.test_case_id} (attempt 1)`);
    expect(refused.stderr).toContain(`${doc.results[1]!.test_case_id} (attempt 1)`);
    expect(existsSync(join(p.dir, "m.json"))).toBe(false);

    const preferred = await runCli(
      ["merge", "a.json", "b.json", "-o", "m.json", "--prefer", "b.json"],
      { cwd: p.dir },
    );
    expect(preferred.code, preferred.stderr).toBe(0);
    const m = JSON.parse(readFileSync(join(p.dir, "m.json"), "utf8")) as ResultSetDocument;
    expect(m.results[0]!.actual_output).toBe("something else");
    expect(m.results[1]!.actual_output).toBe("also else");

    writeFileSync(join(p.dir, "bad.json"), JSON.stringify({ ...doc, started_at: "2026-01-01" }));
    const invalid = await runCli(["merge", "a.json", "bad.json", "-o", "x.json"], { cwd: p.dir });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/bad\.json:\d+:\d+: \/started_at: .*\[schema\.format\]/);
    expect(existsSync(join(p.dir, "x.json"))).toBe(false);

    const stdout = await runCli(["export", doc.run_id, "--format", "resultset"], { cwd: p.dir });
    expect(JSON.parse(stdout.stdout)).toEqual(doc);
    const missing = await runCli(["export", "r_nope", "--format", "resultset", "-o", "n.json"], {
      cwd: p.dir,
    });
    expect(missing.code).toBe(1);
    expect(existsSync(join(p.dir, "n.json"))).toBe(false);
  });
});
