import { describe, expect, it } from "vitest";
import type { Usage } from "../../core/types.js";
import { draft, type HarnessRef, newRun, scoringOf } from "./fixtures.js";

/**
 * Usage beyond tokens and cost (migration 8's usage_detail): cached, cache-write and reasoning
 * tokens and an attempt's reused part, kept on attempts, journal steps and scorings alike.
 */
export function describeUsageContract(h: HarnessRef): void {
  describe("usage detail", () => {
    it("stores a usage's cached, cache-write and reasoning tokens, its reused part and the calls it carried, in every listing, journal and scoring", async () => {
      const { run, owner: me } = await newRun(h.store);
      const detailed: Usage = {
        inputTokens: 1300,
        outputTokens: 130,
        cachedInputTokens: 800,
        cacheWriteTokens: 200,
        reasoningTokens: 40,
        costUsd: 0.003,
        reused: { inputTokens: 1000, outputTokens: 100, cachedInputTokens: 800, costUsd: 0.002 },
        carried: { inputTokens: 50, outputTokens: 5, costUsd: 0.0001 },
      };
      const plain: Usage = { inputTokens: 12, outputTokens: 3 };
      await h.store.journal.record(run.id, me.token, [
        {
          sampleId: "s1",
          epoch: 1,
          step: 0,
          name: "chat",
          kind: "chat",
          inputHash: "0".repeat(64),
          input: { m: 1 },
          result: { content: "x", model: "m" },
          error: null,
          usage: { inputTokens: 1000, outputTokens: 100, cachedInputTokens: 800, costUsd: 0.002 },
          recordedAt: "2025-01-02T00:00:00.000Z",
          durationMs: 5,
        },
      ]);
      await h.store.attempts.record(run.id, me.token, [
        draft({ sampleId: "s1", epoch: 1 }, { usage: detailed }),
        draft({ sampleId: "s2", epoch: 1 }, { usage: plain }),
      ]);
      const usageOf = (list: readonly { sampleId: string; usage: Usage | null }[]) =>
        list.map((x) => [x.sampleId, x.usage]);
      const expected = [
        ["s1", detailed],
        ["s2", plain],
      ];
      expect(usageOf(await h.store.reads.listAttempts(run.id))).toEqual(expected);
      expect(usageOf(await h.store.reads.listAttemptHeads(run.id))).toEqual(expected);
      expect(
        usageOf((await h.store.reads.listAttemptsAfter(run.id, { after: 0 })).attempts),
      ).toEqual(expected);
      const outcomes = (await h.store.reads.listOutcomes(run.id)).entries.filter((e) => e.outcome);
      expect(usageOf(outcomes.map((e) => e.outcome!))).toEqual(expected);
      const inputs = (await h.store.reads.listReportInputs([run.id])).get(run.id)!;
      expect(usageOf(inputs.heads)).toEqual(expected);
      const [step] = await h.store.journal.list(run.id, { sampleId: "s1" });
      expect(step!.usage).toEqual({
        inputTokens: 1000,
        outputTokens: 100,
        cachedInputTokens: 800,
        costUsd: 0.002,
      });
      const judged = { inputTokens: 50, outputTokens: 9, reasoningTokens: 6, costUsd: 0.0001 };
      await h.store.attempts.recordScorings(run.id, me.token, [
        scoringOf({ sampleId: "s2", epoch: 1 }, { usage: judged }),
      ]);
      expect((await h.store.reads.listScorings(run.id)).map((c) => c.usage)).toEqual([judged]);
      expect((await h.store.reads.listReportInputs([run.id])).get(run.id)!.scoringUsage).toEqual([
        judged,
      ]);
    });
  });
}
