import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Scorer, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { Sample } from "../core/types.js";
import { resumeRun } from "../runs/resume-run.js";
import { runEval } from "../runs/start-run.js";
import type { EngineEval } from "../core/eval.js";
import { tempDir, tempStore } from "../../test/helpers/temp-store.js";
import { isPartial } from "./is-partial.js";
import { checkResultLog, ResultLog } from "./result-log.js";
import type { EvalPortResult, ResultSetDocument } from "./result-set-types.js";
import { createResultStream, resultOutputPaths } from "./result-stream.js";
import { validateDocument } from "./validate-document.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
function setup() {
  const t = tempStore();
  cleanups.push(t.cleanup);
  return { store: t.store, dir: t.dir };
}

function evalOf(n: number, failOn?: string): EngineEval {
  const samples = Array.from({ length: n }, (_, i) => {
    const sample: Sample = { id: `q${String(i).padStart(2, "0")}`, input: i, target: String(i) };
    return { sample, fingerprint: fingerprintSample(sample) };
  });
  const solver: SolverFn = async (sample) => {
    await new Promise((r) => setTimeout(r, 2));
    if (sample.id === failOn) throw new Error("boom");
    return String(sample.input);
  };
  const exact: Scorer = { name: "exact", score: ({ sample, output }) => output === sample.target };
  const base = { name: "s", samples, solver, scorers: [exact], reducer: "mean" as const };
  return { ...base, epochs: 2, concurrency: 3, retries: 0 };
}

const readLines = (path: string): EvalPortResult[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as EvalPortResult);
const keys = (results: EvalPortResult[]) => results.map((r) => `${r.test_case_id}#${r.attempt}`);

describe("resultOutputPaths", () => {
  it.each([
    ["results.jsonl", "results.jsonl", "results.json"],
    ["out/r.json", "out/r.jsonl", "out/r.json"],
    ["r.ndjson", "r.ndjson", "r.json"],
    ["results", "results", "results.json"],
  ])("%s → %s + %s", (path, lines, resultSet) => {
    expect(resultOutputPaths(path)).toEqual({ lines, resultSet });
  });
});

describe("createResultStream", () => {
  it("streams each scored key once and writes the ResultSet at the end", async () => {
    const { store, dir } = setup();
    const out = createResultStream({ store, path: join(dir, "results.jsonl") });
    const report = await runEval({
      store,
      eval: evalOf(5, "q02"),
      onEvent: out.onEvent,
      beforeExecute: out.ready,
    });
    const done = await out.finish();
    expect(done).toMatchObject({ written: true, results: 8 });
    const lines = readLines(join(dir, "results.jsonl"));
    const doc = JSON.parse(readFileSync(join(dir, "results.json"), "utf8")) as ResultSetDocument;
    expect(validateDocument(doc, "resultset").errors).toEqual([]);
    expect(doc.run_id).toBe(report.runId);
    // Error attempts are not streamed; every line is the ResultSet's result for its key.
    expect(lines.every((l) => l.error === undefined)).toBe(true);
    expect([...lines].sort((a, b) => keys([a])[0]!.localeCompare(keys([b])[0]!))).toEqual(
      doc.results.filter((r) => r.error === undefined),
    );
    expect(new Set(keys(lines)).size).toBe(8);
  });

  it("on resume appends only missing keys, cutting a torn line and back-filling", async () => {
    const { store, dir } = setup();
    const path = join(dir, "out.json");
    const ev = evalOf(12);
    const stop = new AbortController();
    let committed = 0;
    const first = createResultStream({ store, path });
    const partial = await runEval({
      store,
      eval: ev,
      signal: stop.signal,
      beforeExecute: first.ready,
      onEvent: (e) => {
        first.onEvent(e);
        if (e.type === "attempt-committed" && ++committed === 7) stop.abort();
      },
    });
    const firstReport = await first.finish();
    expect(firstReport.written).toBe(true);
    expect(isPartial(JSON.parse(readFileSync(path, "utf8")))).toBe(true);
    const linesPath = join(dir, "out.jsonl");
    const streamed = readLines(linesPath);
    expect(streamed.length).toBeGreaterThanOrEqual(7);
    // A kill between the store commit and the line, and a torn write.
    const text = readFileSync(linesPath, "utf8").split("\n").filter(Boolean);
    writeFileSync(linesPath, `${text.slice(0, -1).join("\n")}\n{"test_case_id":"q0`);

    const second = createResultStream({ store, path });
    const resumed = await resumeRun({
      store,
      runId: partial.runId,
      eval: ev,
      onEvent: second.onEvent,
      beforeExecute: second.ready,
    });
    expect(resumed.status).toBe("completed");
    expect((await second.finish()).written).toBe(true);
    const all = readLines(linesPath);
    expect(all).toHaveLength(24);
    expect(new Set(keys(all)).size).toBe(24);
    const doc = JSON.parse(readFileSync(path, "utf8")) as ResultSetDocument;
    expect(isPartial(doc)).toBe(false);
    expect(validateDocument(doc, "resultset").valid).toBe(true);
  });

  it("reports, without writing, a run that finished no sample", async () => {
    const { store, dir } = setup();
    const out = createResultStream({ store, path: join(dir, "r.jsonl") });
    const now = new AbortController();
    await runEval({
      store,
      eval: { ...evalOf(2), solver: () => new Promise(() => {}) },
      abortSignal: now.signal,
      onEvent: (e) => {
        out.onEvent(e);
        if (e.type === "run-started") now.abort();
      },
    });
    const report = await out.finish();
    expect(report).toMatchObject({ written: false, problem: { fatal: false } });
    expect(report.problem!.message).toMatch(/no finished sample/);
    expect(existsSync(join(dir, "r.json"))).toBe(false);
  });
});

describe("ResultLog and checkResultLog", () => {
  const line = (id: string, run = "r_1") =>
    JSON.stringify({
      test_case_id: id,
      passed: true,
      grader_results: [],
      metadata: { stet: { run_id: run } },
    });

  it("refuses another run's file and lines that are not Results, leaving them as they are", () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const path = join(dir, "r.jsonl");
    writeFileSync(path, `${line("a", "r_other")}\n`);
    expect(() => checkResultLog(path, "r_1")).toThrow(/results of run r_other, not r_1/);
    writeFileSync(path, `${line("a")}\n{"oops": 1}\n${line("b")}\n`);
    expect(() => checkResultLog(path, "r_1")).toThrow(/r.jsonl:2: /);
    expect(readFileSync(path, "utf8")).toBe(`${line("a")}\n{"oops": 1}\n${line("b")}\n`);
    // A torn last line (a kill mid-write) is not judged; a missing file is fine.
    writeFileSync(path, `${line("a")}\n{"test_case_id":"b","pas`);
    expect(() => checkResultLog(path, "r_1")).not.toThrow();
    expect(() => checkResultLog(join(dir, "none.jsonl"), "r_1")).not.toThrow();
  });

  it("reads a file of many megabytes a piece at a time, naming a bad line by its number in the file", () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const path = join(dir, "r.jsonl");
    // ~3.5 MB of lines: the bad one lies in the third megabyte, past two reads.
    const good = Array.from({ length: 40_000 }, (_, i) => line(`s${i}`));
    writeFileSync(path, `${good.join("\n")}\n{"test_case_id": 7}\n${line("z")}\n`);
    expect(() => checkResultLog(path, "r_1")).toThrow(/r.jsonl:40001: /);
    writeFileSync(path, `${good.join("\n")}\n${line("z", "r_2")}\n`);
    expect(() => checkResultLog(path, "r_1")).toThrow(/results of run r_2/);
  });

  it("appends whole lines to the end, each write durable before it returns", () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const path = join(dir, "r.jsonl");
    writeFileSync(path, `${line("a")}\n`);
    const log = ResultLog.append(path);
    const parse = (l: string) => JSON.parse(l) as EvalPortResult;
    expect(log.write([parse(line("b")), parse(line("c"))])).toBe(2);
    expect(log.write([])).toBe(0);
    log.close();
    expect(readFileSync(path, "utf8")).toBe(`${line("a")}\n${line("b")}\n${line("c")}\n`);
    expect(readdirSync(dir)).toEqual(["r.jsonl"]);
  });
});
