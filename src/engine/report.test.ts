import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { planRun } from "../core/plan.js";
import { UsageSum } from "../core/usage-sum.js";
import { draft, errorDraft, newRun, scoringOf } from "../store/contract/fixtures.js";
import { buildReport, storedReport, summarizePlan } from "./report.js";

const store = storesPerTest();
const priced = (costUsd: number) => ({ usage: { inputTokens: 10, outputTokens: 2, costUsd } });

/** s1..s3 × 2 epochs: s1 scored twice (0.25 each), s2#1 errored (0.5), a judge's scoring (1). */
async function seeded() {
  const s = store();
  const { run, owner, samples } = await newRun(s);
  const earlier = await s.attempts.record(run.id, owner.token, [
    draft({ sampleId: "s1", epoch: 1 }, priced(0.25)),
    draft({ sampleId: "s1", epoch: 2 }, priced(0.25)),
    errorDraft({ sampleId: "s2", epoch: 1 }, priced(0.5)),
  ]);
  const [scoring] = await s.attempts.recordScorings(run.id, owner.token, [
    scoringOf(
      { sampleId: "s1", epoch: 1 },
      { usage: { inputTokens: 1, outputTokens: 1, costUsd: 1 } },
    ),
  ]);
  return { s, run, owner, samples, earlier, scoring: scoring! };
}

describe("buildReport: figures from the stored rows alone", () => {
  it("counts outcomes, and spend as the rows' sums: spent now over the rows this invocation committed", async () => {
    const { s, run, owner, samples, earlier, scoring } = await seeded();
    const heads = await s.reads.listAttemptHeads(run.id);
    const plan = planRun({ snapshot: samples, epochs: 2, attempts: heads, inflight: [] });
    // This invocation re-ran s2#1 and ran s3#1.
    const now = await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s2", epoch: 1 }, priced(0.125)),
      draft({ sampleId: "s3", epoch: 1 }, priced(0.125)),
    ]);
    const isNow = (a: { sampleId: string; epoch: number; attempt: number }) =>
      now.some((n) => n.sampleId === a.sampleId && n.epoch === a.epoch && n.attempt === a.attempt);
    const report = await buildReport({
      store: s,
      run: (await s.runs.get(run.id))!,
      plan: summarizePlan(plan),
      resumed: true,
      isNow,
      scorings: { committed: 0, spentNow: new UsageSum() },
      wallMs: 42,
    });
    expect(report).toMatchObject({
      runId: run.id,
      resumed: true,
      counts: { total: 6, scored: 4, errored: 0, remaining: 2 },
      executed: 2,
      rescored: 0,
      preserved: plan.preserved,
      wallMs: 42,
    });
    expect(report.usage.spentNow.costUsd).toBe(0.25);
    // Every row counts on the total: attempts (the errored one too) and the judge's scoring.
    expect(report.usage.totalSpent.costUsd).toBe(0.25 + 0.25 + 0.5 + 1 + 0.25);
    expect(report.usage.reused.costUsd).toBe(0.5);
    expect(earlier.every((a) => !isNow(a))).toBe(true);

    // The judge's scoring committed now is spent now.
    const withScoring = await buildReport({
      store: s,
      run: (await s.runs.get(run.id))!,
      plan: summarizePlan(plan),
      resumed: true,
      isNow,
      scorings: { committed: 1, spentNow: new UsageSum().addScoring(scoring.usage!) },
      wallMs: 0,
    });
    expect(withScoring.usage.spentNow.costUsd).toBe(1.25);
    expect(withScoring.rescored).toBe(1);
  });

  it("the same store state gives the same figures, read page by page or from the heads given", async () => {
    const { s, run } = await seeded();
    const stored = (await s.runs.get(run.id))!;
    const a = await storedReport(s, stored);
    const b = await storedReport(s, stored);
    expect(a).toEqual(b);
    const heads = await s.reads.listAttemptHeads(run.id);
    const fromHeads = await buildReport({
      store: s,
      run: stored,
      heads,
      plan: a.plan,
      resumed: false,
      wallMs: 0,
      invocation: false,
    });
    expect(fromHeads).toEqual(a);
    expect(a).toMatchObject({
      stored: true,
      counts: { total: 6, scored: 2, errored: 1, remaining: 4 },
      errorsByType: { provider: 1 },
      executed: 0,
    });
    expect(a.usage.spentNow.costUsd ?? 0).toBe(0);
  });

  it("summarizePlan keeps the plan's counts and drops its lists", async () => {
    const { samples } = await newRun(store());
    const plan = planRun({ snapshot: samples, epochs: 2, attempts: [], inflight: [] });
    const summary = summarizePlan(plan);
    expect(summary).toMatchObject({ total: 6, toExecute: 6, toRescore: 0, preserved: 0 });
    expect(summary).not.toHaveProperty("samples");
    expect(summary).not.toHaveProperty("rerunAfter");
  });
});
