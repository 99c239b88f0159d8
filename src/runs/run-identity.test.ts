import { afterEach, describe, expect, it } from "vitest";
import type { EngineEval, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { RunIdentity, SampleRecord } from "../core/types.js";
import { newOwnerIdentity } from "../engine/owner.js";
import { scorers } from "../scorers/index.js";
import { solvers } from "../solvers/index.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { planResume, resumeRun } from "./resume-run.js";
import { evalIdentity, layoutFree } from "./eval-identity.js";
import { compareIdentity } from "./run-identity.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const base: RunIdentity = {
  evalName: "qa",
  solver: { kind: "chat", model: "m1", temperature: 0 },
  scorers: [{ name: "exact", config: { kind: "exact", trim: true } }],
  epochs: 1,
  evalFileSha256: "a".repeat(64),
};

describe("compareIdentity", () => {
  it("lists solver differences key by key, as a change of the eval", () => {
    const now = { ...base, solver: { kind: "chat", model: "m2", seed: 3 } };
    const c = compareIdentity(base, now);
    expect(c.differences).toEqual([
      { kind: "eval", field: "solver.model", recorded: "m1", current: "m2" },
      { kind: "eval", field: "solver.seed", recorded: null, current: 3 },
      { kind: "eval", field: "solver.temperature", recorded: 0, current: null },
    ]);
    expect(c).toMatchObject({ evalChanged: true, scorersChanged: false, acceptable: false });
  });

  it("tells a change of scorers alone, and of the file's bytes or declared epochs alone", () => {
    const judged = {
      ...base,
      scorers: [...base.scorers, { name: "judge", config: { kind: "model_graded" } }],
    };
    expect(compareIdentity(base, judged)).toMatchObject({
      evalChanged: false,
      scorersChanged: true,
      acceptable: false,
      differences: [{ field: "scorers.judge", recorded: null, current: { kind: "model_graded" } }],
    });
    const edited = { ...base, evalFileSha256: "b".repeat(64), epochs: 3 };
    expect(compareIdentity(base, edited)).toMatchObject({
      evalChanged: false,
      scorersChanged: false,
      acceptable: true,
    });
    const { evalFileSha256: _none, ...fileless } = base;
    expect(compareIdentity(base, fileless).differences).toEqual([]);
  });
});

describe("evalIdentity", () => {
  it("describes chat solvers and built-in scorers, and hashes functions by their text", () => {
    const named: SolverFn = function solve() {
      return "x";
    };
    const identity = evalIdentity({
      name: "qa",
      solver: solvers.chat({ model: "openai:gpt-4o-mini", baseURL: "http://127.0.0.1:9/v1" }),
      scorers: [scorers.includes({ caseSensitive: false }), scorers.custom("mine", () => 1)],
      epochs: 2,
    });
    expect(identity.solver).toMatchObject({
      kind: "chat",
      model: "gpt-4o-mini",
      baseURL: "http://127.0.0.1:9/v1",
    });
    expect(identity.scorers).toEqual([
      { name: "includes", config: { kind: "includes", caseSensitive: false } },
      { name: "mine", config: { kind: "function", sourceSha256: expect.any(String) } },
    ]);
    expect(evalIdentity({ ...identity, name: "qa", solver: named, scorers: [] }).solver).toEqual({
      kind: "function",
      name: "solve",
      sourceSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(layoutFree("async function f(a) {\n  return a + 1;\n}")).toBe(
      layoutFree("async function f(a){return a+1}"),
    );
    expect(layoutFree("function f(a) { return a + 1; }")).not.toBe(
      layoutFree("function f(a) { return a + 2; }"),
    );
  });
});

describe("a run without an identity (created before they were recorded)", () => {
  it("is resumed unchecked, and its next claim records the identity it resumed with", async () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    const { store } = t;
    const samples: SampleRecord[] = ["a", "b"].map((id) => {
      const sample = { id, input: id, target: id };
      return { sample, fingerprint: fingerprintSample(sample) };
    });
    const owner = newOwnerIdentity();
    await store.runs.create({
      id: "old",
      config: {
        evalName: "old-eval",
        epochs: 1,
        concurrency: 1,
        retries: 0,
        reducer: "mean",
        solver: { kind: "function", name: "echo" },
        scorers: ["same"],
      },
      samples,
      owner,
    });
    await store.runs.release("old", owner.token, "interrupted", "old release");
    const ev = (solver: SolverFn): EngineEval => ({
      name: "old-eval",
      samples,
      solver,
      scorers: [{ name: "same", score: ({ sample, output }) => output === sample.target }],
      epochs: 1,
      reducer: "mean",
      concurrency: 1,
      retries: 0,
    });
    const echo: SolverFn = (sample) => String(sample.input);
    const report = await resumeRun({ store, runId: "old", eval: ev(echo) });
    expect(report.status).toBe("completed");
    const identity = (await store.runs.get("old"))?.config.identity;
    expect(identity).toMatchObject({ evalName: "old-eval", solver: { kind: "function" } });
    expect((await store.runs.get("old"))?.config.history).toBeUndefined();

    // From now on it is checked like any run.
    const other: SolverFn = (sample) => `${String(sample.input)}!`;
    const planning = await planResume({ store, runId: "old", eval: ev(other), rerun: ["a"] });
    expect(planning.ok).toBe(false);
    if (!planning.ok) expect(planning.refusal.reason).toBe("eval-changed");
  });
});

describe("compareIdentity and local modules", () => {
  const fn = { kind: "function", name: "solve", sourceSha256: "s" };
  const recorded: RunIdentity = { ...base, solver: fn, evalFileSha256: "f".repeat(64) };

  it("names a changed helper module as a change of the eval", () => {
    const was = { ...recorded, solver: { ...fn, modules: { "lib/helper.ts": "aaa" } } };
    const now = { ...recorded, solver: { ...fn, modules: { "lib/helper.ts": "bbb" } } };
    const c = compareIdentity(was, now);
    expect(c.evalChanged).toBe(true);
    expect(c.differences[0]?.field).toBe("solver.modules");
    expect(JSON.stringify(c.differences[0]?.current)).toContain("lib/helper.ts");
  });

  it("accepts modules a run recorded before stet recorded them, when the eval file is the same", () => {
    const now = { ...recorded, solver: { ...fn, modules: { "lib/helper.ts": "aaa" } } };
    expect(compareIdentity(recorded, now).differences).toEqual([]);
    const edited = { ...now, evalFileSha256: "e".repeat(64) };
    expect(compareIdentity(recorded, edited).evalChanged).toBe(true);
  });
});

describe("evalIdentity and local modules", () => {
  it("lists them for a function solver and an agent (tools are code), not for a chat solver", async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "stet-identity-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "eval.mjs"), `import { add } from "./tools.mjs";`);
    writeFileSync(join(dir, "tools.mjs"), `export const add = 1;`);
    const path = join(dir, "eval.mjs");
    const of = (solver: SolverFn) =>
      evalIdentity({ name: "qa", solver, scorers: [scorers.exact()], epochs: 1 }, path).solver;
    const tools = { add: { parameters: { type: "object" }, execute: () => 1 } };
    const model = { model: "gpt-4o-mini", baseURL: "http://127.0.0.1:9/v1" };
    expect(
      of(function solve() {
        return "x";
      }).modules,
    ).toEqual({ "tools.mjs": expect.any(String) });
    expect(of(solvers.agent({ ...model, tools })).modules).toEqual({
      "tools.mjs": expect.any(String),
    });
    expect(of(solvers.chat(model)).modules).toBeUndefined();
  });
});
