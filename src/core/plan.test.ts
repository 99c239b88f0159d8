import { describe, expect, it } from "vitest";
import { planRun, type AttemptFacts } from "./plan.js";
import type { SampleRecord } from "./types.js";

const record = (id: string, fingerprint = `fp-${id}`): SampleRecord => ({
  sample: { id, input: id },
  fingerprint,
});
const snapshot = [record("a"), record("b"), record("c")];
const attempt = (
  sampleId: string,
  epoch: number,
  status: "scored" | "error",
  fingerprint = `fp-${sampleId}`,
): AttemptFacts => ({
  sampleId,
  epoch,
  status,
  fingerprint,
});

describe("planRun", () => {
  it("executes every key of a fresh run, epoch by epoch in dataset order", () => {
    const plan = planRun({ snapshot, epochs: 2, attempts: [], inflight: [] });
    expect(plan.toExecute.map((k) => `${k.sampleId}${k.epoch}`)).toEqual([
      "a1",
      "b1",
      "c1",
      "a2",
      "b2",
      "c2",
    ]);
    expect(plan).toMatchObject({ total: 6, preserved: 0, neverStarted: 6 });
  });

  it("preserves scored keys and classifies the rest as errored, interrupted or never started", () => {
    const plan = planRun({
      snapshot,
      epochs: 1,
      attempts: [attempt("a", 1, "scored"), attempt("b", 1, "error")],
      inflight: [{ sampleId: "c", epoch: 1 }],
    });
    expect(plan).toMatchObject({ preserved: 1, errored: 1, interrupted: 1, neverStarted: 0 });
    expect(plan.toExecute.map((k) => k.sampleId)).toEqual(["b", "c"]);
  });

  it("keeps a key scored once even when a later attempt errored", () => {
    const plan = planRun({
      snapshot,
      epochs: 1,
      attempts: [attempt("a", 1, "scored"), attempt("a", 1, "error")],
      inflight: [],
    });
    expect(plan.preserved).toBe(1);
  });

  it("leaves errored keys alone when asked", () => {
    const plan = planRun({
      snapshot,
      epochs: 1,
      attempts: [attempt("a", 1, "error")],
      inflight: [],
      rerunErrors: false,
    });
    expect(plan).toMatchObject({ erroredKept: 1, errored: 0 });
    expect(plan.toExecute.map((k) => k.sampleId)).toEqual(["b", "c"]);
  });

  it("names the latest errored attempt a key's new attempt replays: not a scorer error's, a changed sample's or a key without one", () => {
    const numbered = (facts: AttemptFacts, n: number, scorer = false): AttemptFacts => ({
      ...facts,
      attempt: n,
      error: facts.status === "error" ? { type: scorer ? "scorer" : "provider" } : null,
    });
    const current = new Map([
      ["a", record("a")],
      ["b", record("b")],
      ["c", record("c", "fp-c-new")],
    ]);
    const plan = planRun({
      snapshot,
      current,
      epochs: 2,
      rerunChanged: true,
      attempts: [
        numbered(attempt("a", 1, "error"), 1),
        numbered(attempt("a", 1, "error"), 2),
        numbered(attempt("a", 2, "error"), 1, true),
        numbered(attempt("b", 1, "error"), 1),
        numbered(attempt("b", 1, "scored"), 2),
        numbered(attempt("c", 1, "error"), 1),
      ],
      inflight: [{ sampleId: "b", epoch: 2 }],
    });
    expect([...plan.replayFrom]).toEqual([["a\u00001", 2]]);
    expect(plan.toExecute.map((k) => `${k.sampleId}${k.epoch}`)).toEqual(["a1", "c1", "b2", "c2"]);
  });

  it("reports changed samples and re-runs only their keys with the new content when told to", () => {
    const current = new Map([
      ["a", record("a")],
      ["b", record("b", "fp-b-new")],
      ["c", record("c")],
    ]);
    const attempts = ["a", "b", "c"].map((id) => attempt(id, 1, "scored"));
    const refused = planRun({ snapshot, current, epochs: 1, attempts, inflight: [] });
    expect(refused.changed).toEqual(["b"]);
    const rerun = planRun({
      snapshot,
      current,
      epochs: 1,
      attempts,
      inflight: [],
      rerunChanged: true,
    });
    expect([...rerun.toExecute]).toEqual([{ sampleId: "b", epoch: 1 }]);
    expect(rerun).toMatchObject({ preserved: 2, changedKeys: 1 });
    expect(rerun.samples.find((r) => r.sample.id === "b")?.fingerprint).toBe("fp-b-new");
  });

  it("is independent of the dataset's order when matching by id", () => {
    const current = new Map([...snapshot].reverse().map((r) => [r.sample.id, r]));
    const plan = planRun({
      snapshot,
      current,
      epochs: 1,
      attempts: [attempt("b", 1, "scored")],
      inflight: [],
    });
    expect(plan).toMatchObject({ changed: [], preserved: 1, missing: [] });
  });

  it("names samples that left the dataset and still executes them from the run's copy", () => {
    const current = new Map([["a", record("a")]]);
    const plan = planRun({ snapshot, current, epochs: 1, attempts: [], inflight: [] });
    expect(plan.missing).toEqual(["b", "c"]);
    expect(plan.toExecute).toHaveLength(3);
  });

  describe("re-run requests", () => {
    const numbered = (n: number, status: "scored" | "error", sampleId = "a"): AttemptFacts => ({
      ...attempt(sampleId, 1, status),
      attempt: n,
    });

    it("executes a scored key again until a scored attempt after the one it follows exists", () => {
      const rerun = [{ sampleId: "a", epoch: 1, after: 1 }];
      const input = { snapshot, epochs: 1, inflight: [], rerun };
      const scored = [
        numbered(1, "scored"),
        numbered(1, "scored", "b"),
        numbered(1, "scored", "c"),
      ];
      const pending = planRun({ ...input, attempts: scored });
      expect([...pending.toExecute]).toEqual([{ sampleId: "a", epoch: 1 }]);
      expect(pending).toMatchObject({ rerun: 1, preserved: 2, neverStarted: 0 });
      expect([...pending.rerunAfter]).toEqual([["a\u00001", 1]]);

      const done = planRun({ ...input, attempts: [...scored, numbered(2, "scored")] });
      expect([...done.toExecute]).toEqual([]);
      expect(done).toMatchObject({ rerun: 0, preserved: 3 });
    });

    it("retries a re-run that errored, or keeps the earlier outcome without rerunErrors", () => {
      const rerun = [{ sampleId: "a", epoch: 1, after: 1 }];
      const attempts = [numbered(1, "scored"), numbered(2, "error")];
      const input = { snapshot: [record("a")], epochs: 1, inflight: [], rerun, attempts };
      const retried = planRun(input);
      expect(retried).toMatchObject({ errored: 1, rerun: 0 });
      expect([...retried.toExecute]).toEqual([{ sampleId: "a", epoch: 1 }]);
      expect(retried.rerunAfter.get("a\u00001")).toBe(1);
      const kept = planRun({ ...input, rerunErrors: false });
      expect(kept).toMatchObject({ preserved: 1, erroredKept: 0 });
      expect(kept.toExecute).toHaveLength(0);
    });
  });
});
