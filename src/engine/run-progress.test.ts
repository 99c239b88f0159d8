import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import type { RunEvent } from "../core/events.js";
import { planRun } from "../core/plan.js";
import { UsageSum } from "../core/usage-sum.js";
import { draft, errorDraft, newRun, scoringOf } from "../store/contract/fixtures.js";
import { RunProgress } from "./run-progress.js";

const store = storesPerTest();

/** A run of s1..s3 × 2 epochs with s1's first epoch already scored, and its plan. */
async function started() {
  const s = store();
  const { run, owner, samples } = await newRun(s);
  const [before] = await s.attempts.record(run.id, owner.token, [
    draft({ sampleId: "s1", epoch: 1 }),
  ]);
  const plan = planRun({ snapshot: samples, epochs: 2, attempts: [before!], inflight: [] });
  return { s, run, owner, plan, before: before! };
}

describe("RunProgress", () => {
  it("counts commits, spend now and outcomes, and knows which stored attempts are this invocation's", async () => {
    const { s, run, owner, plan, before } = await started();
    const events: RunEvent[] = [];
    const counts = new RunProgress(plan, 2, (e) => events.push(e));
    expect(counts.progress).toMatchObject({ total: 6, done: 1, errored: 0, executed: 0 });
    const [failed, retried, scored] = await s.attempts.record(run.id, owner.token, [
      errorDraft({ sampleId: "s2", epoch: 1 }),
      errorDraft({ sampleId: "s2", epoch: 1 }, { usage: { inputTokens: 5, outputTokens: 1 } }),
      draft({ sampleId: "s3", epoch: 2 }),
    ]);
    counts.attemptCommitted(failed!, false);
    counts.attemptCommitted(retried!, true);
    counts.attemptCommitted(scored!, true);
    expect(counts.progress).toMatchObject({
      done: 2,
      errored: 1,
      executed: 3,
      spentNowUsd: 0.0002,
      unpricedNow: 1,
    });
    expect(events.map((e) => e.type)).toEqual(Array(3).fill("attempt-committed"));
    // Each event carries the progress as it was then, not the live object.
    expect(events[0]).toMatchObject({ progress: { executed: 1, errored: 0 } });
    expect([failed, retried, scored].map((a) => counts.isNow(a!))).toEqual([true, true, true]);
    expect(counts.isNow(before)).toBe(false);
    expect(counts.isNow({ sampleId: "s3", epoch: 1, attempt: 1 })).toBe(false);
    expect(counts.isNow({ sampleId: "elsewhere", epoch: 1, attempt: 1 })).toBe(false);
    expect(counts.fingerprintOf("s2")).toBe(plan.samples[1]!.fingerprint);
    expect(counts.fingerprintOf("elsewhere")).toBeUndefined();
    expect(counts.recordOf({ sampleId: "s3", epoch: 2 })).toBe(plan.samples[2]);
  });

  it("counts a scoring's spend as now, and its outcome only when it is the key's", async () => {
    const { s, run, owner, plan } = await started();
    const events: RunEvent[] = [];
    const counts = new RunProgress(plan, 2, (e) => events.push(e));
    const judged = { usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.5 } };
    const [retry, last] = await s.attempts.recordScorings(run.id, owner.token, [
      scoringOf(
        { sampleId: "s1", epoch: 1 },
        { status: "error", error: { type: "scorer", scorer: "exact", message: "no" }, ...judged },
      ),
      scoringOf({ sampleId: "s1", epoch: 1 }, { pass: "p2", ...judged }),
    ]);
    counts.scoringCounted(retry!);
    expect(counts.progress).toMatchObject({ done: 1, errored: 0, spentNowUsd: 0.5 });
    expect(events).toEqual([]);
    counts.scoringCommitted(last!);
    expect(counts.progress).toMatchObject({ done: 2, errored: 0, spentNowUsd: 1 });
    expect(events.map((e) => e.type)).toEqual(["scoring-committed"]);
    expect(counts.scorings.committed).toBe(2);
    // Both scorings' spend, summed as a report sums their stored rows.
    expect(counts.scorings.spentNow.total()).toEqual(
      new UsageSum().addScoring(retry!.usage!).addScoring(last!.usage!).total(),
    );
  });

  it("a worker sees the others' progress from the open keys at its latest claim, never going back", async () => {
    const { s, run, owner, plan } = await started();
    let open: number | undefined = 5;
    const counts = new RunProgress(
      plan,
      2,
      () => {},
      () => open,
    );
    const [a, b] = await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s2", epoch: 1 }),
      draft({ sampleId: "s2", epoch: 2 }),
    ]);
    counts.attemptCommitted(a!, true);
    // 6 keys, 5 open, 2 done here: none done elsewhere yet.
    expect(counts.progress.others).toBe(0);
    open = 1;
    counts.attemptCommitted(b!, true);
    expect(counts.progress.others).toBe(2);
    open = 6;
    counts.attemptCommitted(b!, true);
    expect(counts.progress.others).toBe(2);
  });
});
