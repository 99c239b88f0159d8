import { describe, expect, it } from "vitest";
import { additionEval, setupTestApp as setup } from "../../test/helpers/server-app.js";
import { collectSse } from "../../test/helpers/sse.js";

describe("per-sample limits through the API", () => {
  it("a start body's limits are the run's identity: the same start again, and a resume with them or without any, go on; other limits are refused", async () => {
    const t = setup([additionEval({ n: 4 }).ev]);
    const limits = { turns: 5, wallMs: 60_000 };
    const started = await t.post("/api/runs", { eval: "addition", runId: "lim-1", limits });
    expect(started.status).toBe(200);
    await collectSse(started);
    const run = await t.store.runs.get("lim-1");
    expect(run?.config).toMatchObject({ limits, identity: { limits } });

    const again = await t.post("/api/runs", { eval: "addition", runId: "lim-1", limits });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ runId: "lim-1", complete: true });

    const resumed = await t.post("/api/runs/lim-1/resume", { limits, rerun: ["q00"] });
    expect(resumed.status).toBe(200);
    await collectSse(resumed);

    const other = await t.post("/api/runs/lim-1/resume", { limits: { turns: 6 }, rerun: ["q00"] });
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ error: { code: "eval_changed" } });
    // Without limits (as the web UI's resume sends it): the run's own, from its start body.
    const without = await t.post("/api/runs/lim-1/resume", { rerun: ["q00"] });
    expect(without.status).toBe(200);
    await collectSse(without);
    expect((await t.store.runs.get("lim-1"))?.config).toMatchObject({
      limits,
      identity: { limits },
    });
  });

  it("refuses malformed limits with 400 naming the field", async () => {
    const t = setup([additionEval().ev]);
    const res = await t.post("/api/runs", { eval: "addition", limits: { turns: 0 } });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toMatch(/limits\.turns/);
  });
});
