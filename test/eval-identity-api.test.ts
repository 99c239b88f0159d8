import { describe, expect, it } from "vitest";
import type { SolverFn } from "../src/core/eval.js";
import { defineEval } from "../src/eval/define-eval.js";
import { resolveEval } from "../src/eval/resolve-eval.js";
import type { DatasetRow } from "../src/eval/types.js";
import { runEval } from "../src/runs/start-run.js";
import { scorers } from "../src/scorers/index.js";
import { setupTestApp } from "./helpers/server-app.js";
import { collectSse } from "./helpers/sse.js";

/**
 * The API's resume, start (by `runId`) and rescore check the registered eval against the run's
 * identity as the CLI does (`checkEval`), and say the next step in the API's own terms.
 */

/** Answers "the answer N" (exact 0, includes 1); throws while `down` holds. */
function scoredEval(scorer: "exact" | "includes", solver: SolverFn, name = "scored") {
  return defineEval<DatasetRow>({
    name,
    dataset: Array.from({ length: 6 }, (_, i) => ({
      id: `q${i}`,
      input: `question ${i}`,
      target: `answer ${i}`,
    })),
    solver,
    scorers: [scorer === "exact" ? scorers.exact() : scorers.includes()],
  });
}

async function state(t: ReturnType<typeof setupTestApp>, runId: string) {
  return JSON.stringify([await t.store.runs.get(runId), await t.store.reads.listAttempts(runId)]);
}

describe("the API and a registered eval whose scorers changed", () => {
  it("refuses the resume (409) with the rescore route to call; after it, the metrics are over the new scorer and all keys", async () => {
    let down = true;
    const calls: string[] = [];
    const solver: SolverFn = (sample) => {
      calls.push(sample.id);
      if (down && Number(sample.id.slice(1)) >= 3) throw new Error("endpoint down");
      return `the ${String(sample.target)}`;
    };
    // The server knows the eval with includes; the run was made with exact, same solver.
    const t = setupTestApp([scoredEval("includes", solver), scoredEval("exact", solver, "other")]);
    const first = await runEval({
      store: t.store,
      eval: await resolveEval(scoredEval("exact", solver), { baseDir: t.dir }),
      runId: "r1",
    });
    expect(first.counts).toMatchObject({ scored: 3, errored: 3 });
    down = false;
    calls.length = 0;
    const before = await state(t, "r1");

    for (const body of [{ allowEvalChange: true }, {}]) {
      const refused = await t.post("/api/runs/r1/resume", body);
      expect(refused.status).toBe(409);
      const { error } = (await refused.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("eval_changed");
      expect(error.message).toContain("run r1 was started with other scorers");
      expect(error.message).toContain("\n  POST /api/runs/r1/rescore\n  POST /api/runs/r1/resume");
      expect(error.message).not.toContain("stet ");
    }
    // A start naming the run's id goes the same way; one naming it with another eval is refused.
    const again = await t.post("/api/runs", { eval: "scored", runId: "r1" });
    expect(again.status).toBe(409);
    const other = await t.post("/api/runs", { eval: "other", runId: "r1" });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { error: { message: string } }).error.message).toContain(
      'run r1 is a run of eval "scored", not of "other"',
    );
    expect(calls).toEqual([]);
    expect(await state(t, "r1")).toBe(before);

    const rescored = await collectSse(await t.post("/api/runs/r1/rescore", {}));
    expect(rescored.at(-1)).toMatchObject({ event: "completed", data: { rescored: 3 } });
    const resumed = await collectSse(await t.post("/api/runs/r1/resume", {}));
    expect(resumed.at(-1)).toMatchObject({ event: "completed", data: { status: "completed" } });
    expect(calls.sort()).toEqual(["q3", "q4", "q5"]);
    const { body } = await t.json<{ metrics: unknown }>("/api/runs/r1");
    expect(body.metrics).toEqual([{ scorer: "includes", mean: 1, stderr: 0, samples: 6 }]);
  });

  it("refuses a rescore with another solver (409) until allowEvalChange", async () => {
    const solver: SolverFn = (sample) => `the ${String(sample.target)}`;
    const t = setupTestApp([scoredEval("exact", (sample) => String(sample.target))]);
    await runEval({
      store: t.store,
      eval: await resolveEval(scoredEval("exact", solver), { baseDir: t.dir }),
      runId: "r1",
    });
    const before = await state(t, "r1");
    const refused = await t.post("/api/runs/r1/rescore", {});
    expect(refused.status).toBe(409);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("eval_changed");
    expect(error.message).toContain("solver.sourceSha256");
    expect(error.message).toContain('send {"allowEvalChange": true}');
    expect(await state(t, "r1")).toBe(before);

    const allowed = await collectSse(
      await t.post("/api/runs/r1/rescore", { allowEvalChange: true }),
    );
    expect(allowed.at(-1)).toMatchObject({ event: "completed", data: { rescored: 6 } });
    const config = (await t.store.runs.get("r1"))!.config;
    expect(config.history?.map((h) => h.change)).toEqual(["rescored"]);
    expect(config.history?.[0]?.differences.map((d) => d.field)).toContain("solver.sourceSha256");
  });
});
