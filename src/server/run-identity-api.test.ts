import { describe, expect, it } from "vitest";
import { resolveEval } from "../eval/resolve-eval.js";
import { defineEval } from "../eval/define-eval.js";
import { runEval } from "../runs/start-run.js";
import { scorers } from "../scorers/index.js";
import { additionEval, setupTestApp as setup } from "../../test/helpers/server-app.js";
import { collectSse } from "../../test/helpers/sse.js";
import type { DatasetRow } from "../eval/types.js";

describe("POST /api/runs with runId", () => {
  it("starts once; the same request again answers 200 complete and executes nothing", async () => {
    const add = additionEval();
    const t = setup([add.ev]);
    const first = await collectSse(
      await t.post("/api/runs", { eval: "addition", runId: "nightly-7" }),
    );
    expect(first.at(-1)).toMatchObject({ event: "completed", data: { status: "completed" } });
    const calls = new Map(add.calls);
    const again = await t.post("/api/runs", { eval: "addition", runId: "nightly-7" });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ runId: "nightly-7", status: "completed", complete: true });
    expect(add.calls).toEqual(calls);
  });

  it("reads an existing run's dataset once (the resume's), not first as for a new run", async () => {
    const add = additionEval();
    const rows = [...(add.ev.dataset as Iterable<DatasetRow>)];
    let reads = 0;
    const dataset = {
      *[Symbol.iterator]() {
        reads++;
        yield* rows;
      },
    };
    const t = setup([{ ...add.ev, dataset }]);
    await collectSse(await t.post("/api/runs", { eval: "addition", runId: "nightly-7" }));
    expect(reads).toBe(1);
    const again = await t.post("/api/runs", { eval: "addition", runId: "nightly-7" });
    expect(await again.json()).toEqual({ runId: "nightly-7", status: "completed", complete: true });
    expect(reads).toBe(2);
  });

  it("refuses a malformed runId (400) and one naming a run of another eval (409)", async () => {
    const add = additionEval();
    const other = additionEval({ name: "other" });
    const t = setup([add.ev, other.ev]);
    await collectSse(await t.post("/api/runs", { eval: "addition", runId: "n1" }));
    const bad = await t.post("/api/runs", { eval: "addition", runId: "has space" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "invalid_request" } });
    const wrong = await t.post("/api/runs", { eval: "other", runId: "n1" });
    expect(wrong.status).toBe(409);
    expect(await wrong.json()).toMatchObject({ error: { code: "eval_changed" } });
    expect(other.calls.size).toBe(0);
    expect((await t.store.reads.listRuns()).map((l) => l.run.id)).toEqual(["n1"]);
  });
});

describe("POST /api/runs/:id/resume", () => {
  it("re-runs the keys of `rerun` ids as new attempts; unknown ids are a 400", async () => {
    const add = additionEval();
    const t = setup([add.ev]);
    await collectSse(await t.post("/api/runs", { eval: "addition", runId: "r1" }));
    const unknown = await t.post("/api/runs/r1/resume", { rerun: ["q01", "nope"] });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ error: { code: "invalid_request" } });
    const events = await collectSse(await t.post("/api/runs/r1/resume", { rerun: ["q01"] }));
    expect(events.filter((e) => e.event === "sample")).toHaveLength(1);
    expect(add.calls.get("q01#1")).toBe(2);
    expect(
      (await t.store.reads.listAttempts("r1", { sampleId: "q01" })).map((a) => a.attempt),
    ).toEqual([1, 2]);
  });

  it("refuses a run started with another solver (409 eval_changed) until allowEvalChange", async () => {
    const add = additionEval();
    const t = setup([add.ev]);
    // The same eval name and dataset, another solver: a run of it, its first sample errored.
    const before = defineEval({
      ...add.ev,
      solver: (sample) => {
        if (sample.id === "q00") throw new Error("boom");
        return "?";
      },
      scorers: [scorers.exact()],
    });
    const run = await runEval({
      store: t.store,
      eval: await resolveEval(before, { baseDir: t.dir }),
    });
    const refused = await t.post(`/api/runs/${run.runId}/resume`);
    expect(refused.status).toBe(409);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("eval_changed");
    expect(body.error.message).toContain("solver.sourceSha256");
    expect(body.error.message).toContain('send {"allowEvalChange": true}');
    expect(add.calls.size).toBe(0);

    const events = await collectSse(
      await t.post(`/api/runs/${run.runId}/resume`, { allowEvalChange: true }),
    );
    expect(events.at(-1)).toMatchObject({ event: "completed" });
    expect(add.calls.size).toBe(1);
    const config = (await t.store.runs.get(run.runId))!.config;
    expect(config.history?.[0]?.differences.map((d) => d.field)).toContain("solver.sourceSha256");
  });
});

describe("POST /api/runs with reuse", () => {
  it("reuses the latest run's outcomes: no solver call, the run's config says from where", async () => {
    const add = additionEval();
    const t = setup([add.ev]);
    await collectSse(await t.post("/api/runs", { eval: "addition", runId: "a1" }));
    const calls = new Map(add.calls);
    const events = await collectSse(
      await t.post("/api/runs", { eval: "addition", runId: "b1", reuse: "latest" }),
    );
    expect(events.at(-1)).toMatchObject({ event: "completed", data: { status: "completed" } });
    expect(add.calls).toEqual(calls);
    const run = await t.store.runs.get("b1");
    expect(run?.config.reuse).toMatchObject({ source: "a1", reused: calls.size, notReused: [] });
  });
});
