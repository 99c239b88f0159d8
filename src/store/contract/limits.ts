import { describe, expect, it } from "vitest";
import type { AttemptLimit } from "../../core/limits.js";
import { draft, errorDraft, type HarnessRef, newRun, scoringOf } from "./fixtures.js";

type Listed = { sampleId: string; status: string; limit?: AttemptLimit };

/** What a listing says of each attempt's limit ("absent" when it has none). */
function limitsOf(list: readonly Listed[]) {
  return list.map((x) => [x.sampleId, x.status, "limit" in x ? x.limit : "absent"]);
}

/**
 * An attempt a per-sample limit ended: scored, with the limit it reached, read back by every
 * listing; attempts without one (older rows included) have no `limit`.
 */
export function describeLimitContract(h: HarnessRef): void {
  describe("limits", () => {
    it("stores the limit that ended an attempt and reads it back from every listing", async () => {
      const { run, owner: me } = await newRun(h.store);
      const cost: AttemptLimit = { limit: "costUsd", value: 0.01, used: 0.0093 };
      const wall: AttemptLimit = { limit: "wallMs", value: 500, used: 503 };
      await h.store.attempts.record(run.id, me.token, [
        draft({ sampleId: "s1", epoch: 1 }, { limit: cost, output: "so far" }),
        errorDraft({ sampleId: "s2", epoch: 1 }),
        draft({ sampleId: "s3", epoch: 1 }, { limit: wall, output: "" }),
      ]);
      const expected = [
        ["s1", "scored", cost],
        ["s2", "error", "absent"],
        ["s3", "scored", wall],
      ];
      expect(limitsOf(await h.store.reads.listAttempts(run.id))).toEqual(expected);
      expect(limitsOf(await h.store.reads.listAttempts(run.id, { asCommitted: true }))).toEqual(
        expected,
      );
      expect(limitsOf(await h.store.reads.listAttemptHeads(run.id))).toEqual(expected);
      const pages: Listed[] = [];
      for await (const page of h.store.reads.attemptHeadPages(run.id, 2)) pages.push(...page);
      expect(limitsOf(pages)).toEqual(expected);
      const feed = await h.store.reads.listAttemptsAfter(run.id, { after: 0 });
      expect(limitsOf(feed.attempts)).toEqual(expected);
      const outcomes = (await h.store.reads.listOutcomes(run.id)).entries.filter(
        (e) => e.epoch === 1,
      );
      expect(limitsOf(outcomes.map((e) => e.outcome!))).toEqual(expected);
      const inputs = (await h.store.reads.listReportInputs([run.id])).get(run.id)!;
      expect(limitsOf(inputs.heads)).toEqual(expected);
      // A limited key is finished: it counts as scored.
      expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 2 });
    });

    it("keeps an attempt's limit through a later scoring of it", async () => {
      const { run, owner: me } = await newRun(h.store);
      const turns: AttemptLimit = { limit: "turns", value: 3, used: 3 };
      await h.store.attempts.record(run.id, me.token, [
        draft({ sampleId: "s1", epoch: 1 }, { limit: turns }),
      ]);
      await h.store.attempts.recordScorings(run.id, me.token, [
        scoringOf({ sampleId: "s1", epoch: 1 }, { scores: [{ scorer: "exact", value: 0 }] }),
      ]);
      const [attempt] = await h.store.reads.listAttempts(run.id);
      expect(attempt).toMatchObject({ limit: turns, scores: [{ scorer: "exact", value: 0 }] });
    });
  });
}
