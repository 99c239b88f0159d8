import { describe, expect, it } from "vitest";
import type { ReviewsView, RunDetailView, RunsPageView } from "../src/api/contract.js";
import { collectSse } from "./helpers/sse.js";
import { dumpDb } from "./helpers/db-dump.js";
import { additionEval, setupTestApp as setup } from "./helpers/server-app.js";

/** A completed run of 20 additions; the exact scorer fails q02, q07, q12, q17 (sums ending in 5). */
async function completedRun(t: ReturnType<typeof setup>): Promise<string> {
  const events = await collectSse(await t.post("/api/runs", { eval: "addition" }));
  const runId = String(events[0]?.data.runId);
  await t.executions.idle();
  return runId;
}

const ids = Array.from({ length: 20 }, (_, i) => `q${String(i).padStart(2, "0")}`);
const WRONG = new Set(["q02", "q07", "q12", "q17"]);

/** The paid layer and the judged scorings, as the store holds them, row by row. */
function paidRows(path: string): string {
  const dump = JSON.parse(dumpDb(path)) as Record<string, string[]>;
  return JSON.stringify({ attempts: dump.attempts, scorings: dump.scorings });
}

describe("POST /api/runs/:id/reviews", () => {
  it("stores 20 reviews without touching an attempt; metrics and agreement include them", async () => {
    const t = setup([additionEval({ n: 20 }).ev]);
    const runId = await completedRun(t);
    const before = paidRows(t.path);
    // The reviewer agrees with the judge except on q00 (fails it) and q02 (passes it).
    const reviews = ids.map((sampleId) => ({
      sampleId,
      verdict: (WRONG.has(sampleId) ? sampleId !== "q02" : sampleId === "q00") ? "fail" : "pass",
      note: `looked at ${sampleId}`,
    }));
    const res = await t.post(`/api/runs/${runId}/reviews`, { reviewer: "ada", reviews });
    expect(res.status).toBe(201);
    const stored = (await res.json()) as ReviewsView;
    expect(stored.reviews).toHaveLength(20);
    expect(stored.reviews[0]).toMatchObject({
      runId,
      sampleId: "q00",
      epoch: 1,
      attempt: 1,
      scorer: "human",
      reviewer: "ada",
      value: 0,
      note: "looked at q00",
      current: true,
    });
    expect(paidRows(t.path)).toBe(before);

    const detail = await t.json<RunDetailView>(`/api/runs/${runId}`);
    const human = detail.body.metrics.find((m) => m.scorer === "human");
    // 16 passes of 20 (q00, q07, q12, q17 failed).
    expect(human).toMatchObject({ scorer: "human", samples: 20, mean: 16 / 20 });
    expect(detail.body.metrics.map((m) => m.scorer)).toEqual(["exact", "human"]);
    // Human rows, judge columns: [fail/fail 3, fail/pass 1], [pass/fail 1, pass/pass 15].
    // po = .9, pe = .2×.2 + .8×.8 = .68, κ = .22/.32 = .6875.
    const [agreement] = detail.body.agreement!;
    expect(agreement).toMatchObject({ human: "human", scorer: "exact", n: 20, rate: 0.9 });
    expect(agreement!.matrix).toEqual([
      [3, 1],
      [1, 15],
    ]);
    expect(agreement!.kappa).toBeCloseTo(0.6875, 12);
    // The runs page lists the same metrics as the run's detail.
    const listed = await t.json<RunsPageView>("/api/runs");
    expect(listed.body.runs[0]!.metrics).toEqual(detail.body.metrics);
  });

  it("keeps a re-review in the history; the latest counts", async () => {
    const t = setup([additionEval({ n: 20 }).ev]);
    const runId = await completedRun(t);
    const post = (body: unknown) => t.post(`/api/runs/${runId}/reviews`, body);
    expect((await post({ sampleId: "q01", verdict: "fail", reviewer: "ada" })).status).toBe(201);
    expect((await post({ sampleId: "q01", value: 1, reviewer: "ada", note: "no" })).status).toBe(
      201,
    );
    expect((await post({ sampleId: "q01", verdict: "fail", reviewer: "grace" })).status).toBe(201);
    const history = await t.json<ReviewsView>(`/api/runs/${runId}/reviews`);
    expect(history.body.reviews.map((r) => [r.reviewer, r.value, r.current])).toEqual([
      ["ada", 0, false],
      ["ada", 1, true],
      ["grace", 0, true],
    ]);
    const detail = await t.json<RunDetailView>(`/api/runs/${runId}`);
    // The key's value is its reviewers' mean: (1 + 0) / 2.
    expect(detail.body.metrics.find((m) => m.scorer === "human")).toMatchObject({
      mean: 0.5,
      samples: 1,
    });
  });

  it.each<[string, unknown, RegExp]>([
    [
      "an unknown sample",
      { sampleId: "nope", verdict: "pass" },
      /body\.reviews\.0: run r_\w+ has no sample "nope"/,
    ],
    [
      "an epoch beyond the run's",
      { sampleId: "q01", epoch: 2, verdict: "pass" },
      /epoch 2 is beyond/,
    ],
    [
      "a verdict and a value",
      { sampleId: "q01", verdict: "pass", value: 1 },
      /exactly one of verdict/,
    ],
    ["no verdict", { sampleId: "q01" }, /exactly one of verdict/],
    ["a bad verdict", { sampleId: "q01", verdict: "maybe" }, /body\.reviews\.0\.verdict/],
    ["a scorer that is not human", { sampleId: "q01", verdict: "pass", scorer: "exact" }, /scorer/],
    [
      "an old attempt",
      { sampleId: "q01", verdict: "pass", attempt: 2 },
      /attempt 2 is not the current attempt \(1\)/,
    ],
    ["an unknown field", { sampleId: "q01", verdict: "pass", color: "red" }, /color/],
  ])("refuses %s (400) and stores nothing", async (_label, review, message) => {
    const t = setup([additionEval({ n: 20 }).ev], { reviewer: "ada" });
    const runId = await completedRun(t);
    const res = await t.post(`/api/runs/${runId}/reviews`, review);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: "invalid_request", message: expect.stringMatching(message) },
    });
    expect(await t.store.reviews.list(runId)).toEqual([]);
  });

  it("refuses a batch with one bad review whole, naming it; a review without reviewer", async () => {
    const t = setup([additionEval({ n: 20 }).ev]);
    const runId = await completedRun(t);
    const reviews = [
      { sampleId: "q01", verdict: "pass" },
      { sampleId: "zz", verdict: "pass" },
    ];
    const bad = await t.post(`/api/runs/${runId}/reviews`, { reviewer: "ada", reviews });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({
      error: { message: expect.stringContaining("body.reviews.1: run") },
    });
    const anonymous = await t.post(`/api/runs/${runId}/reviews`, reviews[0]);
    expect(anonymous.status).toBe(400);
    expect(await anonymous.json()).toMatchObject({
      error: { message: expect.stringContaining("no reviewer") },
    });
    expect(await t.store.reviews.list(runId)).toEqual([]);
    const missing = await t.post(`/api/runs/r_nope/reviews`, { reviewer: "ada", reviews });
    expect(missing.status).toBe(404);
    expect((await t.request(`/api/runs/r_nope/reviews`)).status).toBe(404);
  });

  it("takes the server's reviewer (STET_REVIEWER) when a review names none", async () => {
    const t = setup([additionEval({ n: 20 }).ev], { reviewer: "on-call" });
    const runId = await completedRun(t);
    const res = await t.post(`/api/runs/${runId}/reviews`, { sampleId: "q03", verdict: "pass" });
    expect(((await res.json()) as ReviewsView).reviews[0]?.reviewer).toBe("on-call");
  });
});
