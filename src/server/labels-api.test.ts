import { describe, expect, it } from "vitest";
import { additionEval, setupTestApp as setup } from "../../test/helpers/server-app.js";
import { collectSse } from "../../test/helpers/sse.js";

const SECRET = "sk-api-label-secret-77";

describe("POST /api/runs with labels", () => {
  it("records the body's labels, redacted, and lists the run by them", async () => {
    const previous = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = SECRET;
    try {
      const t = setup([additionEval().ev]);
      const labels = { pr: "12", branch: "fix/x", leak: SECRET };
      const events = await collectSse(
        await t.post("/api/runs", { eval: "addition", runId: "l1", labels }),
      );
      expect(events.at(-1)).toMatchObject({ event: "completed" });
      const stored = (await t.store.runs.get("l1"))!.labels;
      expect(stored).toEqual({ branch: "fix/x", leak: "[redacted]", pr: "12" });
      expect(Object.keys(stored)).toEqual(["branch", "leak", "pr"]);
      await collectSse(await t.post("/api/runs", { eval: "addition", runId: "l2" }));
      const page = await t.json<{ runs: { id: string }[] }>("/api/runs?label=pr=12");
      expect(page.body.runs.map((r) => r.id)).toEqual(["l1"]);
      const all = await t.json<{ runs: { id: string; labels: object }[] }>("/api/runs");
      expect(all.body.runs.map((r) => [r.id, r.labels])).toEqual([
        ["l2", {}],
        ["l1", stored],
      ]);
    } finally {
      if (previous === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = previous;
    }
  });

  it.each([
    [{ "bad key": "x" }, /labels: label key .*bad key/],
    [{ ok: "a\nb" }, /control character/],
    [{ ok: 3 }, /body\.labels/],
  ])("refuses labels %j with a 400 naming them, recording no run", async (labels, message) => {
    const t = setup([additionEval().ev]);
    const res = await t.post("/api/runs", { eval: "addition", runId: "bad", labels });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(message);
    expect(await t.store.runs.get("bad")).toBeUndefined();
  });
});
