import { describe, expect, it } from "vitest";
import type { AttemptDraft, ScoringDraft } from "../../core/types.js";
import { draft, errorDraft, type HarnessRef, newRun, scoringOf } from "./fixtures.js";
import type { ScoringFilter } from "../types.js";

const k11 = { sampleId: "s1", epoch: 1 };
const k21 = { sampleId: "s2", epoch: 1 };

/** An attempt whose solver succeeded and whose second scorer threw: its output is kept. */
function scorerErrorDraft(key = k11): AttemptDraft {
  return draft(key, {
    status: "error",
    scores: [{ scorer: "exact", value: 1 }],
    error: { type: "scorer", scorer: "judge", message: "judge threw" },
  });
}

function scoring(key = k11, overrides: Partial<ScoringDraft> = {}): ScoringDraft {
  return scoringOf(key, {
    scores: [
      { scorer: "exact", value: 1 },
      { scorer: "judge", value: 0.5, explanation: "half right" },
    ],
    rescored: ["judge"],
    scorerConfig: { judge: { kind: "model-graded", model: "gpt-test" } },
    usage: { inputTokens: 40, outputTokens: 4, costUsd: 0.001 },
    durationMs: 120,
    ...overrides,
  });
}

/** What a scoring may never change: the attempt's output, spend, timing and provenance. */
function solverSide(a: {
  output: unknown;
  usage: unknown;
  startedAt: string;
  completedAt: string;
}) {
  const { output, usage, startedAt, completedAt } = a;
  return { output, usage, startedAt, completedAt };
}

/** Scores as a layer of their own: scorings add rows, and an attempt's current scores are its latest. */
export function describeScoringContract(h: HarnessRef): void {
  describe("scorings", () => {
    it("turn a scorer error into a scored key without touching the attempt", async () => {
      const { run, owner: me } = await newRun(h.store, { config: { scorers: ["exact", "judge"] } });
      const [stored] = await h.store.attempts.record(run.id, me.token, [scorerErrorDraft()]);
      expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 0, errored: 1 });

      const [made] = await h.store.attempts.recordScorings(run.id, me.token, [scoring()]);
      expect(made).toMatchObject({ runId: run.id, scoring: 1, ...scoring() });

      const [now] = await h.store.reads.listAttempts(run.id);
      expect(now).toMatchObject({ status: "scored", error: null, scores: scoring().scores });
      expect(solverSide(now!)).toEqual(solverSide(stored!));
      // As committed, it is what its execution stored.
      expect(await h.store.reads.listAttempts(run.id, { asCommitted: true })).toEqual([stored]);
      expect((await h.store.reads.listAttemptHeads(run.id))[0]).toMatchObject({ status: "scored" });
      expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 1, errored: 0 });
      const page = await h.store.reads.listOutcomes(run.id, { sampleId: "s1" });
      expect(page.entries.find((e) => e.epoch === 1)).toMatchObject({
        status: "scored",
        outcome: { attempt: 1, scores: scoring().scores },
      });
      expect((await h.store.reads.listOutcomes(run.id, { result: "fail" })).total).toBe(1);
      // Completed work stands: the key is scored now, so a new attempt for it is refused.
      await expect(h.store.attempts.record(run.id, me.token, [draft(k11)])).rejects.toMatchObject({
        code: "E_ALREADY_SCORED",
      });
    });

    it("keep a scoring's retries as its own, apart from its attempt's", async () => {
      const { run, owner: me } = await newRun(h.store, { config: { scorers: ["exact", "judge"] } });
      await h.store.attempts.record(run.id, me.token, [
        { ...scorerErrorDraft(), retries: 1 },
        scorerErrorDraft(k21),
      ]);
      await h.store.attempts.recordScorings(run.id, me.token, [
        scoring(k11, { retries: 4 }),
        scoring(k21),
      ]);
      const scorings = await h.store.reads.listScorings(run.id);
      expect(scorings.map((s) => [s.sampleId, "retries" in s ? s.retries : "absent"])).toEqual([
        ["s1", 4],
        ["s2", "absent"],
      ]);
      // The attempt keeps its own count; the scoring's never becomes the attempt's.
      const attempts = await h.store.reads.listAttempts(run.id);
      expect(attempts.map((a) => [a.sampleId, "retries" in a ? a.retries : "absent"])).toEqual([
        ["s1", 1],
        ["s2", "absent"],
      ]);
      await expect(
        h.store.attempts.recordScorings(run.id, me.token, [scoring(k11, { retries: -2 })]),
      ).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
      expect(await h.store.reads.listScorings(run.id)).toHaveLength(2);
    });

    it("number per attempt; the latest scoring is the attempt's current one", async () => {
      const { run, owner: me } = await newRun(h.store);
      await h.store.attempts.record(run.id, me.token, [draft(k11), draft(k21)]);
      const second = scoring(k11, { pass: "p2", scores: [{ scorer: "exact", value: 0 }] });
      await h.store.attempts.recordScorings(run.id, me.token, [scoring(k11), scoring(k21)]);
      const [again] = await h.store.attempts.recordScorings(run.id, me.token, [second]);
      expect(again?.scoring).toBe(2);

      const history = await h.store.reads.listScorings(run.id);
      expect(history.map((s) => [s.sampleId, s.attempt, s.scoring, s.pass])).toEqual([
        ["s1", 1, 1, "p1"],
        ["s1", 1, 2, "p2"],
        ["s2", 1, 1, "p1"],
      ]);
      expect(await h.store.reads.listScorings(run.id, { sampleId: "s2" })).toHaveLength(1);
      // A page's range of sample ids, and one pass: what a continued rescore reads per page.
      const of = async (filter: ScoringFilter) =>
        (await h.store.reads.listScorings(run.id, filter)).map((s) => [s.sampleId, s.pass]);
      expect(await of({ fromSampleId: "s2" })).toEqual([["s2", "p1"]]);
      expect(await of({ toSampleId: "s1" })).toEqual([
        ["s1", "p1"],
        ["s1", "p2"],
      ]);
      expect(await of({ fromSampleId: "s1", toSampleId: "s2", pass: "p1" })).toEqual([
        ["s1", "p1"],
        ["s2", "p1"],
      ]);
      expect(await of({ pass: "p2" })).toEqual([["s1", "p2"]]);
      expect(await of({ fromSampleId: "s3" })).toEqual([]);
      const [s1] = await h.store.reads.listAttempts(run.id, { sampleId: "s1" });
      expect(s1?.scores).toEqual([{ scorer: "exact", value: 0 }]);
    });

    it("can make a scored attempt an error again, and back", async () => {
      const { run, owner: me } = await newRun(h.store);
      await h.store.attempts.record(run.id, me.token, [draft(k11)]);
      const failed = scoring(k11, {
        status: "error",
        scores: [{ scorer: "exact", value: 1 }],
        error: { type: "scorer", scorer: "judge", message: "judge timed out" },
      });
      await h.store.attempts.recordScorings(run.id, me.token, [failed]);
      expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 0, errored: 1 });
      expect((await h.store.reads.listAttemptHeads(run.id))[0]?.error).toEqual(failed.error);
      await h.store.attempts.recordScorings(run.id, me.token, [scoring(k11, { pass: "p2" })]);
      expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 1, errored: 0 });
    });

    it("refuses a missing attempt, a failed solver's, a stale owner's or a broken draft, all or nothing", async () => {
      const { run, owner: me } = await newRun(h.store);
      await h.store.attempts.record(run.id, me.token, [draft(k11), errorDraft(k21)]);
      const refusals: [ScoringDraft[], string, string][] = [
        [[scoring(k11), scoring(k11, { attempt: 9 })], "not-the-owner", "E_FENCED"],
        [[scoring(k11), scoring(k11, { attempt: 9 })], me.token, "E_INVALID_INPUT"],
        [[scoring(k11), scoring(k21)], me.token, "E_INVALID_INPUT"],
        [
          [scoring(k11, { scores: [{ scorer: "x", value: Number.NaN }] })],
          me.token,
          "E_INVALID_INPUT",
        ],
        [[scoring(k11, { status: "error" })], me.token, "E_INVALID_INPUT"],
      ];
      for (const [drafts, token, code] of refusals) {
        await expect(h.store.attempts.recordScorings(run.id, token, drafts)).rejects.toMatchObject({
          code,
        });
      }
      expect(await h.store.reads.listScorings(run.id)).toEqual([]);
      expect((await h.store.reads.listAttempts(run.id, { sampleId: "s1" }))[0]?.scores).toEqual(
        draft(k11).scores,
      );
    });
  });
}
