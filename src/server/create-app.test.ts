import { describe, expect, it } from "vitest";
import { StetError } from "../core/errors.js";
import { hostId } from "../engine/owner.js";
import { additionEval, setupTestApp as setup } from "../../test/helpers/server-app.js";
import { collectSse } from "../../test/helpers/sse.js";
import { validateDocument } from "../evalport/validate-document.js";
import { toApiError } from "./api-error.js";
import { runConfig } from "../store/contract/fixtures.js";

/** A completed run of `addition` (6 samples, every fifth sum wrong). */
async function completedRun(t: ReturnType<typeof setup>) {
  const events = await collectSse(await t.post("/api/runs", { eval: "addition" }));
  const runId = String(events[0]?.data.runId);
  await t.executions.idle();
  return runId;
}

describe("errors", () => {
  it.each([
    ["GET", "/api/runs/nope", 404, "run_not_found"],
    ["GET", "/api/runs/nope/samples", 404, "run_not_found"],
    ["GET", "/api/runs/nope/samples/q00", 404, "run_not_found"],
    ["GET", "/api/runs/nope/events", 404, "run_not_found"],
    ["GET", "/api/runs/nope/resultset", 404, "run_not_found"],
    ["POST", "/api/runs/nope/resume", 404, "run_not_found"],
    ["POST", "/api/runs/nope/cancel", 404, "run_not_found"],
    ["GET", "/api/benchmarks/nope", 404, "benchmark_not_found"],
    ["GET", "/api/nothing-here", 404, "not_found"],
    ["GET", "/api/runs?status=bogus", 400, "invalid_request"],
    ["GET", "/api/runs?limit=0", 400, "invalid_request"],
    ["GET", "/api/runs?limit=many", 400, "invalid_request"],
  ])("%s %s → %i %s", async (method, path, status, code) => {
    const t = setup([additionEval().ev]);
    const res = await t.request(path, { method });
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual({ error: { code, message: expect.any(String) } });
  });

  it.each<[string, unknown, RegExp]>([
    ["a missing eval", {}, /body\.eval/],
    ["an unknown field", { eval: "addition", color: "red" }, /color/],
    ["epochs of the wrong type", { eval: "addition", epochs: "two" }, /body\.epochs/],
    ["a zero limit", { eval: "addition", limit: 0 }, /body\.limit/],
    ["a fractional concurrency", { eval: "addition", concurrency: 1.5 }, /body\.concurrency/],
  ])("refuses a start body with %s (400) and starts nothing", async (_label, body, message) => {
    const t = setup([additionEval().ev]);
    const res = await t.post("/api/runs", body);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: "invalid_request", message: expect.stringMatching(message) },
    });
    expect(await t.store.reads.listRuns()).toEqual([]);
  });

  it("refuses a body that is not JSON", async () => {
    const t = setup([additionEval().ev]);
    const res = await t.app.request("/api/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{eval:",
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: "invalid_request" } });
  });

  it("answers 404 eval_not_found for an unregistered eval", async () => {
    const t = setup([additionEval().ev]);
    const res = await t.post("/api/runs", { eval: "ghost" });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "eval_not_found" } });
  });

  it("hides an unexpected error's details behind `internal` and logs them", async () => {
    const lines: string[] = [];
    const t = setup([], { log: (line) => lines.push(line) });
    t.store.reads.listRuns = async () => {
      throw new TypeError("secret internals at /srv/x.ts:12");
    };
    const res = await t.request("/api/runs");
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({
      error: { code: "internal", message: "internal error; see the server log" },
    });
    expect(text).not.toMatch(/internals|at \//);
    expect(lines.join("\n")).toMatch(/secret internals/);
  });

  it.each([
    ["E_RUN_ACTIVE", 409, "run_active"],
    ["E_NOTHING_TO_RESUME", 400, "nothing_to_resume"],
    ["E_CHANGED_SAMPLES", 409, "changed_samples"],
    ["E_STORE", 503, "store_unavailable"],
    ["E_DATASET", 422, "dataset_invalid"],
    ["E_ENDPOINT", 502, "endpoint_failed"],
  ] as const)("maps %s to %i %s", (code, status, apiCode) => {
    expect(toApiError(new StetError(code, "m"))).toMatchObject({ status, code: apiCode });
  });
});

describe("the token rule", () => {
  it("requires the bearer token on every /api request when one is set", async () => {
    const t = setup([additionEval().ev], { token: "s3cret-token-value" });
    const attempts: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: "Basic x" },
    ];
    for (const headers of attempts) {
      const res = await t.request("/api/runs", { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(await res.json()).toMatchObject({ error: { code: "unauthorized" } });
    }
    const start = await t.post("/api/runs", { eval: "addition" });
    expect(start.status).toBe(401);
    expect(await t.store.reads.listRuns()).toEqual([]);
    const ok = await t.request("/api/runs", {
      headers: { authorization: "Bearer s3cret-token-value" },
    });
    expect(ok.status).toBe(200);
    expect(await ok.text()).not.toContain("s3cret-token-value");
  });

  it("needs no token when none is set", async () => {
    const t = setup();
    expect((await t.request("/api/runs")).status).toBe(200);
  });

  it("serves the web UI's page and script without the token: they carry no data", async () => {
    const t = setup([], { token: "s3cret-token-value" });
    const page = await t.request("/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await page.text()).toContain('<script type="module" src="/ui/app.js">');
    const script = await t.request("/ui/app.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(await script.text()).toContain("/api/runs");
    expect((await t.request("/ui/other.js")).status).toBe(404);
  });
});

describe("reading", () => {
  it("lists runs with filters and paging", async () => {
    const t = setup([additionEval().ev, additionEval({ name: "other", n: 2 }).ev]);
    const first = await completedRun(t);
    const second = await completedRun(t);
    await collectSse(await t.post("/api/runs", { eval: "other" }));
    await t.executions.idle();

    const all = await t.json<{ runs: { id: string }[]; nextOffset: number | null }>("/api/runs");
    expect(all.body.runs).toHaveLength(3);
    const page = await t.json<{ runs: { id: string }[]; nextOffset: number | null }>(
      "/api/runs?eval=addition&limit=1",
    );
    expect(page.body.runs.map((r) => r.id)).toEqual([second]);
    expect(page.body.nextOffset).toBe(1);
    const next = await t.json<{ runs: { id: string }[] }>(
      "/api/runs?benchmark=addition&limit=1&offset=1",
    );
    expect(next.body.runs.map((r) => r.id)).toEqual([first]);
    const none = await t.json<{ runs: unknown[] }>("/api/runs?status=running");
    expect(none.body.runs).toEqual([]);
    const listed = await t.json("/api/runs?eval=other");
    expect(listed.body).toMatchObject({
      runs: [
        {
          evalName: "other",
          benchmark: "other",
          status: "completed",
          owner: null,
          counts: { total: 2, done: 2, errored: 0, remaining: 0 },
        },
      ],
    });
  });

  it("details a run from its stored attempts: counts, plan, metrics, cost, no owner token", async () => {
    const t = setup([additionEval().ev]);
    const runId = await completedRun(t);
    const { status, body } = await t.json(`/api/runs/${runId}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: runId,
      status: "completed",
      config: { evalName: "addition", epochs: 1, evalPath: "/virtual/addition.ts" },
      counts: { total: 6, done: 6, errored: 0, remaining: 0 },
      plan: { preserved: 6, toExecute: 0 },
      metrics: [{ scorer: "exact", mean: 5 / 6, samples: 6 }],
      cost: { spent: { attempts: 6, costUsd: expect.closeTo(0.006) } },
    });
    expect(body).toMatchObject({ owner: null });
    expect(JSON.stringify(body)).not.toMatch(/"token"/);
  });

  it.each([
    ["no attempt priced: unknown (null)", () => undefined, null, 6],
    [
      "some unpriced: the priced part, a lower bound",
      (id: string) => (id < "q03" ? 0.001 : undefined),
      expect.closeTo(0.003),
      3,
    ],
  ])(
    "a run's cost with %s, in its detail and its benchmark",
    async (_name, costOf, costUsd, unpriced) => {
      const t = setup([additionEval({ costOf }).ev]);
      const runId = await completedRun(t);
      const spent = { attempts: 6, inputTokens: 18, outputTokens: 6, costUsd, unpriced };
      // Seen from the API no invocation ran: the run's spend is spent, nothing "reused".
      expect((await t.json(`/api/runs/${runId}`)).body).toMatchObject({
        cost: { spent, reused: { attempts: 0, inputTokens: 0, outputTokens: 0 } },
      });
      expect((await t.json("/api/benchmarks/addition")).body).toMatchObject({
        runs: [{ id: runId, cost: { spent } }],
      });
    },
  );

  it("serves the run's EvalPort ResultSet, which validates", async () => {
    const t = setup([additionEval().ev]);
    const runId = await completedRun(t);
    const { status, body } = await t.json(`/api/runs/${runId}/resultset`);
    expect(status).toBe(200);
    expect(validateDocument(body, "resultset")).toMatchObject({ valid: true, errors: [] });
    expect(body).toMatchObject({
      results: expect.arrayContaining([expect.objectContaining({ test_case_id: "q00" })]),
    });
    expect((body as { results: unknown[] }).results).toHaveLength(6);
  });

  it("answers 409 no_results, before streaming, for a run with no finished sample", async () => {
    const t = setup([additionEval().ev]);
    await t.store.runs.create({
      id: "r_unstarted",
      config: runConfig({ evalName: "x", epochs: 1, concurrency: 1, solver: {}, scorers: [] }),
      samples: [{ sample: { id: "a", input: "a" }, fingerprint: "fp:a" }],
      owner: { host: "other-host#1234", pid: 77, token: "tok-elsewhere" },
    });
    const { status, body } = await t.json("/api/runs/r_unstarted/resultset");
    expect(status).toBe(409);
    expect(body).toMatchObject({ error: { code: "no_results", message: /no finished sample/ } });
  });

  it("pages a run's samples with filters, and shows one sample's attempt history", async () => {
    const t = setup([additionEval().ev]);
    const runId = await completedRun(t);
    type Page = { total: number; samples: { sampleId: string; status: string; input: string }[] };
    const all = await t.json<Page>(`/api/runs/${runId}/samples?limit=4`);
    expect(all.body.total).toBe(6);
    expect(all.body.samples.map((s) => s.sampleId)).toEqual(["q00", "q01", "q02", "q03"]);
    // Sums 1, 3, 5, 7, 9, 11: only 5 (q02) is answered "wrong".
    const failed = await t.json<Page>(`/api/runs/${runId}/samples?result=fail`);
    expect(failed.body.samples.map((s) => s.sampleId)).toEqual(["q02"]);
    const found = await t.json<Page>(`/api/runs/${runId}/samples?search=4%2B5`);
    expect(found.body.samples).toMatchObject([{ sampleId: "q04", input: "4+5", status: "scored" }]);
    expect((await t.request(`/api/runs/${runId}/samples?status=done`)).status).toBe(400);

    const one = await t.json(`/api/runs/${runId}/samples/q02`);
    expect(one.body).toMatchObject({
      sample: { id: "q02", input: "2+3", target: "5" },
      epochs: [{ epoch: 1, status: "scored", outcomeAttempt: 1 }],
      attempts: [{ sampleId: "q02", attempt: 1, output: "wrong", stale: false }],
    });
    const missing = await t.request(`/api/runs/${runId}/samples/q99`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "sample_not_found" } });
  });

  it("lists the registered evals", async () => {
    const t = setup([additionEval().ev]);
    expect((await t.json("/api/evals")).body).toEqual({
      evals: [{ name: "addition", path: "/virtual/addition.ts" }],
      problems: [],
    });
  });

  it("shows a live owner elsewhere with its heartbeat age and liveness", async () => {
    const t = setup();
    await t.store.runs.create({
      id: "r_elsewhere",
      config: runConfig({ evalName: "x", epochs: 1, concurrency: 1, solver: {}, scorers: [] }),
      samples: [],
      owner: { host: "other-host#1234", pid: 77, token: "tok-elsewhere" },
    });
    const { body } = await t.json("/api/runs/r_elsewhere");
    expect(body).toMatchObject({
      status: "running",
      owner: { host: "other-host#1234", pid: 77, alive: true, heartbeatAgeMs: expect.any(Number) },
    });
    expect(JSON.stringify(body)).not.toContain("tok-elsewhere");
    expect(hostId()).not.toBe("other-host#1234");
  });
});
