import { describe, expect, it } from "vitest";
import { additionEval, setupTestApp } from "../../test/helpers/server-app.js";
import { BOUNDS } from "../core/bounds.js";

// The API checks its numbers against the table the CLI and defineEval use (core/bounds.ts): an
// out-of-bound value is a 400 naming the field, the value and the bound, and nothing is created.
describe("API request bodies within bounds", () => {
  it.each([
    ["concurrency", 1e9, "an integer from 1 to 1000"],
    ["concurrency", 1e7, "an integer from 1 to 1000"],
    ["epochs", 1e7, "an integer from 1 to 10000"],
    ["limit", 1e15, "an integer from 1 to 100000000"],
    ["maxCost", 2e9, "a number of US dollars above 0, at most 1000000000"],
  ])("POST /api/runs with %s %d → 400, no run", async (field, value, bound) => {
    const t = setupTestApp([additionEval().ev]);
    const res = await t.post("/api/runs", { eval: "addition", [field]: value });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        code: "invalid_request",
        message: `body.${field}: expected ${bound}, got ${value} (${BOUNDS[field as keyof typeof BOUNDS].why})`,
      },
    });
    expect(await t.store.reads.listRuns()).toEqual([]);
  });

  it("POST /api/runs/:id/resume with maxCost above its bound → 400", async () => {
    const t = setupTestApp([additionEval().ev]);
    const res = await t.post("/api/runs/r_nope/resume", { maxCost: 2e9 });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: {
        code: "invalid_request",
        message: expect.stringMatching(
          /^body\.maxCost: expected a number of US dollars above 0, at most 1000000000, got 2000000000/,
        ),
      },
    });
  });

  it("the largest values in bounds are accepted", async () => {
    const t = setupTestApp([additionEval({ n: 2 }).ev]);
    const res = await t.post("/api/runs", { eval: "addition", concurrency: 1_000, limit: 1e8 });
    expect(res.status).toBe(200);
    await res.text();
    const [listed] = await t.store.reads.listRuns();
    expect(listed!.run.config).toMatchObject({ concurrency: 1_000, limit: 1e8 });
  });
});
