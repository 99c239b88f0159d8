import { describe, expect, it } from "vitest";
import { additionEval, setupTestApp as setup } from "../../test/helpers/server-app.js";
import { collectSse } from "../../test/helpers/sse.js";

// additionEval's attempts cost $0.001 each.
describe("maxCost through the API", () => {
  it("a start stops at the cap (stopping and completed say budget); a resume with a higher cap finishes", async () => {
    const { ev, calls } = additionEval({ n: 40, concurrency: 3 });
    const t = setup([ev]);
    const events = await collectSse(await t.post("/api/runs", { eval: "addition", maxCost: 0.01 }));
    const stopping = events.filter((e) => e.event === "stopping");
    expect(stopping).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({
          reason: "budget",
          note: expect.stringMatching(/^budget:/),
        }),
      }),
    ]);
    const completed = events.at(-1)!;
    expect(completed).toMatchObject({
      event: "completed",
      data: {
        status: "interrupted",
        stopped: { reason: "budget", note: expect.stringMatching(/ of the \$0\.01 cap$/) },
        budget: { maxCostUsd: 0.01, reached: true },
      },
    });
    const runId = String(completed.data.runId);
    const spent = (completed.data as { usage: { totalSpent: { costUsd: number } } }).usage
      .totalSpent.costUsd;
    expect(spent).toBeLessThanOrEqual(0.01 + 3 * 0.001 + 1e-9);
    const first = calls.size;
    expect(first).toBeLessThan(40);

    const resumed = await collectSse(await t.post(`/api/runs/${runId}/resume`, { maxCost: 1 }));
    expect(resumed.at(-1)).toMatchObject({
      event: "completed",
      data: { status: "completed", budget: { maxCostUsd: 1, reached: false } },
    });
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect(calls.size).toBe(40);
  });

  it.each([[0], [-1], ["0.5"], [null]])(
    "refuses maxCost %j with 400 naming the field",
    async (maxCost) => {
      const { ev, calls } = additionEval();
      const t = setup([ev]);
      const start = await t.post("/api/runs", { eval: "addition", maxCost });
      expect(start.status).toBe(400);
      expect(await start.json()).toMatchObject({
        error: { code: "invalid_request", message: expect.stringMatching(/^body\.maxCost: /) },
      });
      const resume = await t.post("/api/runs/r_any/resume", { maxCost });
      expect(resume.status).toBe(400);
      expect(calls.size).toBe(0);
    },
  );
});
