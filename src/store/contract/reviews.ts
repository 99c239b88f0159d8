import { describe, expect, it } from "vitest";
import type { ReviewDraft } from "../../core/reviews.js";
import { draft, type HarnessRef, newRun } from "./fixtures.js";

function review(overrides: Partial<ReviewDraft> = {}): ReviewDraft {
  return {
    sampleId: "s1",
    epoch: 1,
    attempt: 1,
    scorer: "human",
    reviewer: "ada",
    value: 1,
    note: "right answer",
    createdAt: "2025-01-03T00:00:00.000Z",
    ...overrides,
  };
}

/** Reviews: append-only rows beside the attempts, needing no ownership of the run. */
export function describeReviewContract(h: HarnessRef): void {
  describe("reviews", () => {
    it("stores reviews in order, keeps every one, and never touches the attempts", async () => {
      const { run, owner: me } = await newRun(h.store);
      await h.store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
      const before = await h.store.reads.listAttempts(run.id);
      const first = await h.store.reviews.record(run.id, [review()]);
      const second = await h.store.reviews.record(run.id, [
        review({ value: 0, note: null, createdAt: "2025-01-04T00:00:00.000Z" }),
        review({ reviewer: "grace", scorer: "human:tone", value: 0.5 }),
      ]);
      expect(first[0]!.seq).toBeLessThan(second[0]!.seq);
      expect(second[0]!.seq).toBeLessThan(second[1]!.seq);
      // Another connection (another process) reads them all, oldest first.
      const other = await h.connect();
      const listed = await other.reviews.list(run.id);
      expect(listed).toEqual([...first, ...second]);
      expect(listed.map((r) => [r.reviewer, r.value, r.note])).toEqual([
        ["ada", 1, "right answer"],
        ["ada", 0, null],
        ["grace", 0.5, "right answer"],
      ]);
      expect(await h.store.reads.listAttempts(run.id)).toEqual(before);
      expect(await h.store.reviews.list("r_other")).toEqual([]);
    });

    it("lists the reviews of a range of sample ids, or the first few, oldest first", async () => {
      const { run, owner: me } = await newRun(h.store, { ids: ["a", "b", "c", "d"] });
      const ids = ["a", "b", "c", "d"];
      await h.store.attempts.record(
        run.id,
        me.token,
        ids.map((sampleId) => draft({ sampleId, epoch: 1 })),
      );
      // Stored out of key order: a range keeps the store's order (seq), not the keys'.
      const stored = await h.store.reviews.record(
        run.id,
        ["d", "b", "a", "c", "b"].map((sampleId) => review({ sampleId })),
      );
      const of = async (filter: { fromSampleId?: string; toSampleId?: string; limit?: number }) =>
        (await h.store.reviews.list(run.id, filter)).map((r) => r.sampleId);
      expect(await of({ fromSampleId: "b", toSampleId: "c" })).toEqual(["b", "c", "b"]);
      expect(await of({ fromSampleId: "c" })).toEqual(["d", "c"]);
      expect(await of({ toSampleId: "a" })).toEqual(["a"]);
      expect(await of({ limit: 2 })).toEqual(["d", "b"]);
      expect(await h.store.reviews.list(run.id, {})).toEqual(stored);
    });

    it("refuses a batch naming an attempt that is not stored, and stores none of it", async () => {
      const { run, owner: me } = await newRun(h.store);
      await h.store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
      const batch = [review(), review({ attempt: 2 })];
      await expect(h.store.reviews.record(run.id, batch)).rejects.toMatchObject({
        code: "E_INVALID_INPUT",
        message: expect.stringContaining("no attempt 2 of sample s1 epoch 1"),
      });
      await expect(h.store.reviews.record(run.id, [review({ scorer: "judge" })])).rejects.toThrow(
        /not human or human:<rubric>/,
      );
      expect(await h.store.reviews.list(run.id)).toEqual([]);
    });
  });
}
