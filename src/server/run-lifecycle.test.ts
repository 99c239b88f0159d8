import { spawnSync } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import { hostId } from "../engine/owner.js";
import { resolveEval } from "../eval/resolve-eval.js";
import type { Eval } from "../eval/types.js";
import {
  additionEval,
  gatedEval,
  storedCounts,
  setupTestApp as setup,
  waitFor,
} from "../../test/helpers/server-app.js";
import { collectSse, readSse, readUntil, type SseEvent } from "../../test/helpers/sse.js";
import { runConfig } from "../store/contract/fixtures.js";
import { openSqliteStore } from "../store/sqlite/index.js";

type App = ReturnType<typeof setup>;

/** GET /api/runs/:id counts must equal what the stored attempts say. */
async function expectCountsMatch(t: App, runId: string) {
  const { body } = await t.json<{ counts: unknown }>(`/api/runs/${runId}`);
  expect(body.counts).toEqual(await storedCounts(t.store, runId));
  return body.counts;
}

const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid;

/** A running run of `ev` whose owner (a process of this host) is dead, with `scored` keys done. */
async function orphanedRun(t: App, ev: Eval, scored: number) {
  const resolved = await resolveEval(ev, { baseDir: t.dir });
  const owner = { host: hostId(), pid: deadPid(), token: "dead-owner-token" };
  const run = await t.store.runs.create({
    id: "r_orphan",
    config: {
      evalName: ev.name,
      epochs: 1,
      concurrency: 2,
      retries: 0,
      reducer: "mean",
      solver: { kind: "function" },
      scorers: ["exact"],
    },
    samples: [...resolved.samples],
    owner,
  });
  const drafts = resolved.samples.slice(0, scored).map(({ sample, fingerprint }) => ({
    sampleId: sample.id,
    epoch: 1,
    status: "scored" as const,
    output: sample.target ?? null,
    scores: [{ scorer: "exact", value: 1 }],
    usage: null,
    transcript: null,
    error: null,
    startedAt: new Date().toISOString(),
    completedAt: new Date().toISOString(),
    durationMs: 1,
    fingerprint,
    provenance: { kind: "executed" as const },
  }));
  if (drafts.length > 0) await t.store.attempts.record(run.id, owner.token, drafts);
  return run.id;
}

describe("POST /api/runs", () => {
  it("streams started first, a sample and progress per committed attempt, completed last", async () => {
    const t = setup([additionEval().ev]);
    const res = await t.post("/api/runs", {
      eval: "addition",
      model: "m-1",
      epochs: 2,
      limit: 4,
      concurrency: 3,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = await collectSse(res);
    expect(events[0]).toMatchObject({
      event: "started",
      data: { runId: expect.stringMatching(/^r_/), total: 8, preserved: 0, remaining: 8 },
    });
    expect(events.filter((e) => e.event === "sample")).toHaveLength(8);
    expect(events.filter((e) => e.event === "progress").at(-1)?.data).toMatchObject({
      total: 8,
      done: 8,
      remaining: 0,
    });
    expect(events.at(-1)).toMatchObject({
      event: "completed",
      data: { status: "completed", counts: { total: 8, scored: 8 } },
    });
    const runId = String(events[0]?.data.runId);
    expect((await t.json(`/api/runs/${runId}`)).body).toMatchObject({
      model: "m-1",
      config: { model: "m-1", epochs: 2, limit: 4, concurrency: 3 },
    });
  });

  it("keeps executing when the client disconnects", async () => {
    const { ev, calls } = additionEval({ delayMs: 20 });
    const t = setup([ev]);
    const stream = readSse(await t.post("/api/runs", { eval: "addition" }));
    const [started] = await readUntil(stream, "started");
    await stream.return(undefined);
    await t.executions.idle();
    const runId = String(started?.data.runId);
    expect((await t.json(`/api/runs/${runId}`)).body).toMatchObject({
      status: "completed",
      counts: { done: 6, remaining: 0 },
    });
    expect([...calls.values()]).toEqual([1, 1, 1, 1, 1, 1]);
  });
});

describe("cancel and resume", () => {
  it("cancel then resume completes the run; counts match the stored attempts at every step", async () => {
    const gate = gatedEval({ n: 10, concurrency: 2 });
    const t = setup([gate.ev]);
    gate.allow(3);
    const stream = readSse(await t.post("/api/runs", { eval: "gated" }));
    const seen = await readUntil(stream, "sample", 3);
    const runId = String(seen[0]?.data.runId);
    await waitFor(async () => (gate.waiting() === 2 ? true : undefined), "2 blocked calls");
    expect(await expectCountsMatch(t, runId)).toMatchObject({ done: 3, remaining: 7 });

    const cancel = await t.post(`/api/runs/${runId}/cancel`);
    expect(cancel.status).toBe(202);
    expect(await cancel.json()).toEqual({ runId, status: "stopping" });
    gate.allow(2); // the two in-flight calls finish within the grace period and are kept
    const rest: SseEvent[] = [];
    for await (const e of stream) rest.push(e);
    expect(rest.map((e) => e.event)).toContain("stopping");
    expect(rest.at(-1)).toMatchObject({ event: "completed", data: { status: "interrupted" } });
    await t.executions.idle();
    const stopped = await t.json(`/api/runs/${runId}`);
    expect(stopped.body).toMatchObject({ status: "interrupted", note: "interrupted by a signal" });
    expect(await expectCountsMatch(t, runId)).toMatchObject({ done: 5, remaining: 5 });

    gate.allow();
    const resumed = await collectSse(await t.post(`/api/runs/${runId}/resume`));
    expect(resumed[0]).toMatchObject({
      event: "started",
      data: { runId, resumed: true, total: 10, preserved: 5, remaining: 5 },
    });
    expect(resumed.filter((e) => e.event === "sample")).toHaveLength(5);
    expect(resumed.at(-1)).toMatchObject({ event: "completed", data: { status: "completed" } });
    expect(await expectCountsMatch(t, runId)).toEqual({
      total: 10,
      done: 10,
      errored: 0,
      remaining: 0,
    });
    expect([...gate.calls.values()].every((n) => n === 1)).toBe(true);
    expect(gate.calls.size).toBe(10);

    const again = await t.post(`/api/runs/${runId}/resume`);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: { code: "nothing_to_resume" } });
  });

  it("answers 409 run_active to a resume while this server executes the run", async () => {
    const gate = gatedEval();
    const t = setup([gate.ev]);
    const stream = readSse(await t.post("/api/runs", { eval: "gated" }));
    const [started] = await readUntil(stream, "started");
    const runId = String(started?.data.runId);
    const res = await t.post(`/api/runs/${runId}/resume`);
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({
      error: {
        code: "run_active",
        message: expect.stringMatching(
          new RegExp(`pid ${process.pid} on .*heartbeat \\d+\\.\\ds ago`),
        ),
      },
    });
    gate.allow();
    await t.executions.idle();
  });

  it("lets exactly one of 20 concurrent resume requests execute; the others get 409", async () => {
    const gate = gatedEval({ n: 6 });
    const t = setup([gate.ev]);
    const runId = await orphanedRun(t, gate.ev, 2);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => t.post(`/api/runs/${runId}/resume`)),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    for (const r of answers.filter((a) => a.status === 409)) {
      expect(await r.json()).toMatchObject({ error: { code: "run_active" } });
    }
    gate.allow();
    const winner = answers.find((r) => r.status === 200)!;
    const events = await collectSse(winner);
    expect(events[0]).toMatchObject({ data: { preserved: 2, remaining: 4 } });
    expect(gate.calls.size).toBe(4);
    expect([...gate.calls.values()].every((n) => n === 1)).toBe(true);
  });

  it("settles a dead owner's run whose every key is scored: 400, and it reads as completed", async () => {
    const gate = gatedEval({ n: 3 });
    const t = setup([gate.ev]);
    const runId = await orphanedRun(t, gate.ev, 3);
    const res = await t.post(`/api/runs/${runId}/resume`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: "nothing_to_resume" } });
    expect((await t.json(`/api/runs/${runId}`)).body).toMatchObject({
      status: "completed",
      owner: null,
    });
    expect(gate.calls.size).toBe(0);
  });

  it("answers 409 changed_samples when the dataset changed, and re-runs them on request", async () => {
    const before = gatedEval({ n: 3 });
    const now = gatedEval({ n: 3, variant: " (edited)" });
    const t = setup([now.ev]);
    const runId = await orphanedRun(t, before.ev, 3);
    const refused = await t.post(`/api/runs/${runId}/resume`);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: {
        code: "changed_samples",
        message: expect.stringMatching(/g00.*"rerunChanged": true/),
      },
    });
    now.allow();
    const events = await collectSse(
      await t.post(`/api/runs/${runId}/resume`, { rerunChanged: true }),
    );
    expect(events[0]?.data).toMatchObject({ preserved: 2, remaining: 1 });
    expect([...now.calls.keys()]).toEqual(["g00#1"]);
  });

  it.each([
    ["a finished run", 409, "run_not_running"],
    ["a run executed by a live process elsewhere", 409, "run_active"],
    ["a run whose owner is dead", 200, undefined],
  ] as const)("cancels %s → %i", async (kind, status, code) => {
    const gate = gatedEval({ n: 2 });
    const t = setup([gate.ev]);
    const runId = await orphanedRun(t, gate.ev, 0);
    const run = (await t.store.runs.get(runId))!;
    if (kind === "a finished run") {
      await t.store.runs.release(runId, run.owner!.token, "completed");
    } else if (kind === "a run executed by a live process elsewhere") {
      await t.store.runs.claim(
        runId,
        { host: "elsewhere#1", pid: 1, token: "t2" },
        run.owner!.token,
      );
    }
    const res = await t.post(`/api/runs/${runId}/cancel`);
    expect(res.status).toBe(status);
    const body = await res.json();
    if (code) expect(body).toMatchObject({ error: { code } });
    else {
      expect(body).toEqual({ runId, status: "interrupted" });
      expect(await t.store.runs.get(runId)).toMatchObject({
        status: "interrupted",
        owner: null,
        note: expect.stringMatching(/died/),
      });
    }
  });
});

describe("POST /api/runs/:id/rescore", () => {
  it("scores the stored outputs again without calling the solver, and refuses like a resume", async () => {
    const { ev, calls } = additionEval();
    const t = setup([ev]);
    const events = await collectSse(await t.post("/api/runs", { eval: "addition" }));
    const runId = String(events[0]?.data.runId);
    const before = await t.store.reads.listAttempts(runId);

    const rescored = await collectSse(await t.post(`/api/runs/${runId}/rescore`, {}));
    expect(rescored[0]).toMatchObject({ event: "started", data: { runId, total: 6 } });
    expect(rescored.filter((e) => e.event === "scoring")).toHaveLength(6);
    expect(rescored.filter((e) => e.event === "sample")).toHaveLength(0);
    expect(rescored.at(-1)).toMatchObject({
      event: "completed",
      data: { status: "completed", rescored: 6, executed: 0 },
    });
    expect([...calls.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    const after = await t.store.reads.listAttempts(runId);
    expect(after.map(({ output, usage, startedAt }) => ({ output, usage, startedAt }))).toEqual(
      before.map(({ output, usage, startedAt }) => ({ output, usage, startedAt })),
    );
    expect(await t.store.reads.listScorings(runId)).toHaveLength(6);

    expect((await t.post(`/api/runs/r_ghost/rescore`, {})).status).toBe(404);
    const bad = await t.post(`/api/runs/${runId}/rescore`, { scorers: ["nope"] });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "invalid_request" } });
    expect((await t.post(`/api/runs/${runId}/rescore`, { extra: 1 })).status).toBe(400);
    expect(await t.store.reads.listScorings(runId)).toHaveLength(6);
  });
});

describe("GET /api/runs/:id/events", () => {
  it("follows a run from the store: progress, a sample per attempt, completed", async () => {
    const gate = gatedEval({ n: 5 });
    const t = setup([gate.ev]);
    const stream = readSse(await t.post("/api/runs", { eval: "gated" }));
    const [started] = await readUntil(stream, "started");
    const runId = String(started?.data.runId);
    const following = t.request(`/api/runs/${runId}/events`);
    const res = await following;
    expect(res.status).toBe(200);
    const events = collectSse(res);
    gate.allow();
    const seen = await events;
    expect(seen[0]).toMatchObject({ event: "progress", data: { status: "running", total: 5 } });
    expect(seen.filter((e) => e.event === "sample")).toHaveLength(5);
    expect(seen.at(-1)).toMatchObject({
      event: "completed",
      data: { status: "completed", done: 5, remaining: 0 },
    });
  });

  it("ends at once for a run that is not running", async () => {
    const t = setup([gatedEval({ n: 2 }).ev]);
    const runId = await orphanedRun(t, gatedEval({ n: 2 }).ev, 1);
    const events = await collectSse(await t.request(`/api/runs/${runId}/events`));
    expect(events.map((e) => e.event)).toEqual(["progress", "completed"]);
    // Its owner is dead: the stream says what a resume would find, interrupted, and why.
    expect(events[0]?.data).toMatchObject({ status: "interrupted" });
    expect(events[1]?.data).toMatchObject({
      status: "interrupted",
      orphaned: true,
      reason: expect.stringMatching(/^pid \d+ is gone$/),
      done: 1,
    });
    // Derived on read: the store still says running until someone recovers or resumes it.
    expect((await t.store.runs.get(runId))?.status).toBe("running");
  });
});

describe("reading a dead owner's run", () => {
  it("GET /api/runs and /api/runs/:id show it interrupted and orphaned, without writing", async () => {
    const t = setup([gatedEval({ n: 3 }).ev]);
    const runId = await orphanedRun(t, gatedEval({ n: 3 }).ev, 1);
    const before = await t.store.runs.get(runId);

    const { body: detail } = await t.json(`/api/runs/${runId}`);
    expect(detail).toMatchObject({
      status: "interrupted",
      orphaned: true,
      owner: { alive: false, reason: expect.stringMatching(/^pid \d+ is gone$/) },
      counts: { total: 3, done: 1, remaining: 2 },
    });
    const { body: list } = await t.json<{ runs: object[] }>("/api/runs");
    expect(list.runs).toEqual([
      expect.objectContaining({ id: runId, status: "interrupted", orphaned: true }),
    ]);
    // It is no longer one of the running runs.
    expect((await t.json<{ runs: object[] }>("/api/runs?status=running")).body.runs).toEqual([]);
    // Nothing was written: the store still holds it as running, owner and all.
    expect(await t.store.runs.get(runId)).toEqual({
      ...before,
      owner: { ...before!.owner, heartbeatAgeMs: expect.any(Number) },
    });
  });

  it("judges another host's owner by its heartbeat: stale is interrupted, fresh is running", async () => {
    // A stale limit of a minute, and heartbeats stamped now and two minutes ago (by a store
    // whose clock is behind): far from the limit either way, however slow the machine.
    const t = setup([], { staleMs: 60_000 });
    const behind = openSqliteStore(t.path, { now: () => Date.now() - 120_000 });
    onTestFinished(() => behind.close());
    const config = runConfig({ evalName: "x", epochs: 1, concurrency: 1, solver: {}, scorers: [] });
    const owner = (token: string) => ({ host: "other-host#1234", pid: 77, token });
    await t.store.runs.create({ id: "r_fresh", config, samples: [], owner: owner("tok-fresh") });
    await behind.runs.create({ id: "r_far", config, samples: [], owner: owner("tok-far") });
    expect((await t.json("/api/runs/r_fresh")).body).toMatchObject({
      status: "running",
      orphaned: false,
      owner: { alive: true },
    });
    expect((await t.json("/api/runs/r_far")).body).toMatchObject({
      status: "interrupted",
      orphaned: true,
      owner: { alive: false, reason: expect.stringMatching(/heartbeat is 1[23]\ds old/) },
    });
  });
});
