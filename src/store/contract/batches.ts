import { describe, expect, it } from "vitest";
import type { HarnessRef } from "./fixtures.js";

const submission = (nonce: string, runId: string, createdAt: string) => ({
  nonce,
  runId,
  provider: "openai",
  endpoint: "http://127.0.0.1:1/v1",
  keys: [
    { sampleId: "q1", epoch: 1, customId: `${nonce}-0`, request: "h1" },
    { sampleId: "q2", epoch: 2, customId: `${nonce}-1`, request: "h2" },
  ],
  createdAt,
});

/** Batch submissions: recorded before the batch exists, then its id and status, per run. */
export function describeBatchContract(h: HarnessRef): void {
  describe("batches", () => {
    it("records a submission with no batch id, then its id and what became of it", async () => {
      await h.store.batches.record(submission("stetaaa", "r1", "2026-01-01T00:00:00.000Z"));
      expect(await h.store.batches.list("r1")).toEqual([
        {
          ...submission("stetaaa", "r1", "2026-01-01T00:00:00.000Z"),
          batchId: null,
          status: "recorded",
          note: null,
          updatedAt: "2026-01-01T00:00:00.000Z",
        },
      ]);
      await h.store.batches.update(
        "stetaaa",
        { batchId: "batch_1", status: "submitted" },
        "2026-01-01T00:01:00.000Z",
      );
      // A later update without an id or a note keeps them.
      await h.store.batches.update(
        "stetaaa",
        { status: "failed", note: "expired" },
        "2026-01-01T00:02:00.000Z",
      );
      await h.store.batches.update("stetaaa", { status: "ended" }, "2026-01-01T00:03:00.000Z");
      const [row] = await h.store.batches.list("r1");
      expect(row).toMatchObject({
        batchId: "batch_1",
        status: "ended",
        note: "expired",
        updatedAt: "2026-01-01T00:03:00.000Z",
      });
    });

    it("lists a run's submissions oldest first, and no other run's; a nonce is recorded once", async () => {
      await h.store.batches.record(submission("stetbbb", "r1", "2026-01-01T00:00:02.000Z"));
      await h.store.batches.record(submission("stetccc", "r1", "2026-01-01T00:00:01.000Z"));
      await h.store.batches.record(submission("stetddd", "r2", "2026-01-01T00:00:00.000Z"));
      expect((await h.store.batches.list("r1")).map((s) => s.nonce)).toEqual([
        "stetccc",
        "stetbbb",
      ]);
      await expect(
        h.store.batches.record(submission("stetbbb", "r1", "2026-01-01T00:00:03.000Z")),
      ).rejects.toMatchObject({ code: "E_STORE" });
      // Seen by another connection of the same store.
      const other = await h.connect();
      expect((await other.batches.list("r2")).map((s) => s.nonce)).toEqual(["stetddd"]);
    });
  });
}
