import { describe, expect, it } from "vitest";
import { seedDistributedRun } from "../../test/helpers/distributed-run.js";
import { gatedEval, setupTestApp as setup, waitFor } from "../../test/helpers/server-app.js";
import { collectSse, readSse, readUntil } from "../../test/helpers/sse.js";
import { resolveEval } from "../eval/resolve-eval.js";
import { startDistributed } from "../runs/start-run.js";
import { workerId } from "../runs/run-workers.js";
import { draft } from "../store/contract/fixtures.js";
import { requireLeases, type Store } from "../store/types.js";
import { createApp } from "./create-app.js";
import { ExecutionRegistry } from "./executions.js";

describe("a distributed run through the API", () => {
  it("GET /api/runs/:id lists its workers by id, GET /api/runs counts the active ones", async () => {
    const t = setup();
    const { runId, active, left, ordinaryId } = await seedDistributedRun(t.store);

    const detail = await t.request(`/api/runs/${runId}`);
    const text = await detail.text();
    // Workers' tokens fence their writes: never served, not even in part.
    for (const token of [active.token, left.token]) expect(text).not.toContain(token);
    expect(JSON.parse(text)).toMatchObject({
      status: "running",
      owner: null,
      orphaned: false,
      distributed: true,
      activeWorkers: 1,
      counts: { total: 6, done: 3, remaining: 3 },
      workers: [
        {
          id: workerId(active.token),
          host: "alpha-host",
          pid: 4242,
          concurrency: 4,
          keysDone: 2,
          rejected: 0,
          state: "active",
          leaseExpired: false,
        },
        { id: workerId(left.token), keysDone: 1, rejected: 1, state: "finished" },
      ],
    });

    const plain = await t.json(`/api/runs/${ordinaryId}`);
    expect(plain.body).toMatchObject({ distributed: false });
    expect(plain.body).not.toHaveProperty("workers");

    const list = await t.json<{ runs: Record<string, unknown>[] }>("/api/runs");
    expect(list.body.runs.find((r) => r.id === runId)).toMatchObject({
      distributed: true,
      activeWorkers: 1,
    });
    const ordinary = list.body.runs.find((r) => r.id === ordinaryId);
    expect(ordinary).toMatchObject({ distributed: false });
    expect(ordinary).not.toHaveProperty("activeWorkers");
  });

  it("GET /api/runs/:id/events follows it while workers commit, until it is closed", async () => {
    const t = setup();
    const { runId, active } = await seedDistributedRun(t.store);
    const events = readSse(await t.request(`/api/runs/${runId}/events`));
    // No owner, yet live: the stream does not end at once as for a dead owner's run.
    const [first] = await readUntil(events, "progress");
    expect(first?.data).toMatchObject({ status: "running", done: 3, remaining: 3 });

    const [key] = (await requireLeases(t.store).claim(runId, active.token, 1)).keys;
    await t.store.attempts.record(runId, active.token, [draft(key!)]);
    const seen = await readUntil(events, "progress");
    expect(seen.at(-1)?.data).toMatchObject({ status: "running", done: 4, remaining: 2 });

    await requireLeases(t.store).leave(runId, active.token, "stopped");
    expect(await requireLeases(t.store).closeRun(runId, "interrupted")).toBe(true);
    const end = await readUntil(events, "completed");
    expect(end.at(-1)?.data).toMatchObject({ status: "interrupted", done: 4 });
    await events.return(undefined);
  });

  it("resume of a distributed run over a store without leases is refused before a stream opens (400)", async () => {
    const t = setup();
    const { runId } = await seedDistributedRun(t.store);
    const before = await t.store.reads.listAttemptHeads(runId);
    const noLeases: Store = { ...t.store, leases: undefined };
    const app = createApp({ store: noLeases, executions: new ExecutionRegistry(), pollMs: 50 });
    const res = await app.request(`/api/runs/${runId}/resume`, { method: "POST" });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/json/);
    expect(await res.json()).toMatchObject({
      error: { message: expect.stringMatching(/cannot hold distributed runs/) },
    });
    expect(await t.store.reads.listAttemptHeads(runId)).toEqual(before);
  });

  it("cancel asks its workers (202); resume joins the interrupted run as a worker and finishes it", async () => {
    // Its solver calls wait until the worker has seen the cancel: the run cannot finish first.
    const { ev, calls, allow } = gatedEval({ n: 12, concurrency: 2 });
    const t = setup([ev]);
    const resolved = await resolveEval(ev, { baseDir: t.dir });
    let started!: (runId: string) => void;
    const id = new Promise<string>((resolve) => (started = resolve));
    const first = startDistributed({
      store: t.store,
      eval: resolved,
      heartbeatMs: 20,
      onEvent: (event) => {
        if (event.type === "run-started") started(event.runId);
        if (event.type === "stopping") allow();
      },
    });
    const runId = await id;

    const cancel = await t.post(`/api/runs/${runId}/cancel`);
    expect(cancel.status).toBe(202);
    expect(await cancel.json()).toMatchObject({ runId, status: "requested" });
    expect((await first).stopped?.reason).toBe("cancel");
    expect(await t.store.runs.get(runId)).toMatchObject({ status: "interrupted" });
    const before = calls.size;
    expect(before).toBeLessThan(12);

    const res = await t.post(`/api/runs/${runId}/resume`);
    expect(res.status).toBe(200);
    const events = await collectSse(res);
    expect(events.at(-1)).toMatchObject({ event: "completed" });
    expect(await t.store.runs.get(runId)).toMatchObject({ status: "completed", owner: null });
    expect(calls.size).toBe(12);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect((await requireLeases(t.store).list(runId)).map((w) => w.state)).toEqual([
      "stopped",
      "finished",
    ]);
  });

  it("resume takes the body's maxCost as the cap over the run's total, and refuses what a distributed run cannot do", async () => {
    const { ev, calls, allow } = gatedEval({ n: 12, concurrency: 2, costUsd: 0.01 });
    const t = setup([ev]);
    const resolved = await resolveEval(ev, { baseDir: t.dir });
    let started!: (runId: string) => void;
    const id = new Promise<string>((resolve) => (started = resolve));
    const first = startDistributed({
      store: t.store,
      eval: resolved,
      heartbeatMs: 20,
      onEvent: (event) => {
        if (event.type === "run-started") started(event.runId);
        if (event.type === "stopping") allow();
      },
    });
    const runId = await id;
    allow(3);
    await waitFor(
      async () => ((await t.store.reads.listAttemptHeads(runId)).length >= 3 ? true : undefined),
      "three attempts",
    );
    expect((await t.post(`/api/runs/${runId}/cancel`)).status).toBe(202);
    await first;
    const spent = (await t.store.reads.listAttemptHeads(runId)).length;
    const before = new Map(calls);

    for (const [ask, named] of [
      [{ rerun: ["g00"] }, "rerun"],
      [{ rerunFailed: true }, "rerunFailed"],
      [{ rerunLimited: true }, "rerunLimited"],
      [{ rerunChanged: true }, "rerunChanged"],
      [{ allowEvalChange: true }, "allowEvalChange"],
    ] as const) {
      const refused = await t.post(`/api/runs/${runId}/resume`, ask);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        error: { code: "invalid_request", message: expect.stringContaining(named) },
      });
    }
    expect(await t.store.runs.get(runId)).toMatchObject({ status: "interrupted" });

    // A cap below what the run has spent: this worker stops at once and executes nothing.
    const res = await t.post(`/api/runs/${runId}/resume`, { maxCost: 0.005 });
    expect(res.status).toBe(200);
    const events = await collectSse(res);
    expect(events.at(-1)).toMatchObject({
      event: "completed",
      data: { status: "interrupted", budget: { maxCostUsd: 0.005, reached: true } },
    });
    expect(calls).toEqual(before);
    expect((await t.store.reads.listAttemptHeads(runId)).length).toBe(spent);
  });
});
