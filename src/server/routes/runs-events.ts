import { Hono } from "hono";
import type {
  CountsView,
  EventMessage,
  FollowCompletedView,
  FollowEvents,
  FollowProgressView,
} from "../../api/contract.js";
import type { Run } from "../../core/types.js";
import { runAsRead, withLiveness } from "../../runs/read-run.js";
import { requireRun } from "../../runs/require-run.js";
import type { RunCounts } from "../../store/types.js";
import type { AppDeps } from "../app-deps.js";
import { attemptSummary } from "../execution-messages.js";
import { sseResponse } from "../sse.js";

/**
 * GET /runs/:id/events: live progress of a run executing anywhere, read from the store (so it
 * works for runs of other servers and CLI processes). `progress {total, done, errored,
 * remaining, rateWaiting?}` at once and whenever the counts or the requests waiting on a rate
 * limit change, `sample` per newly committed attempt, and
 * `completed {status, …}` when the run is no longer running (or its owner died), then the end.
 *
 * @example app.route("/api", runsEventsRoutes(deps));
 */
export function runsEventsRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.get("/runs/:id/events", async (c) => {
    const runId = c.req.param("id");
    const run = await requireRun(deps.store, runId);
    const release = deps.streams.take();
    const stop = new AbortController();
    return sseResponse(c, follow(deps, run, stop.signal), {
      redact: deps.redact,
      log: deps.log,
      onAbort: () => stop.abort(),
      onEnd: release,
    });
  });

  return app;
}

async function* follow(
  deps: AppDeps,
  first: Run,
  signal: AbortSignal,
): AsyncGenerator<EventMessage<FollowEvents>> {
  const { store } = deps;
  let run = first;
  let { cursor } = await store.reads.listAttemptsAfter(run.id);
  let counts = await store.reads.countKeys(run.id);
  let waiting = await rateWaiting(deps, run.id);
  yield { event: "progress", data: progressOf(run, counts, waiting, deps) };
  for (;;) {
    // The run was read before the counts: an owner commits before it releases, so once the run
    // reads as finished the counts read after it are final.
    if (!isLive(run, deps)) {
      yield { event: "completed", data: ended(run, counts, deps) };
      return;
    }
    await sleep(deps.pollMs, signal);
    if (signal.aborted) return;
    run = (await store.runs.get(run.id)) ?? run;
    for (;;) {
      const page = await store.reads.listAttemptsAfter(run.id, { after: cursor });
      for (const attempt of page.attempts) yield { event: "sample", data: attemptSummary(attempt) };
      cursor = page.cursor;
      if (page.attempts.length === 0) break;
    }
    const next = await store.reads.countKeys(run.id);
    const waitingNow = await rateWaiting(deps, run.id);
    if (!sameCounts(next, counts) || waitingNow !== waiting) {
      counts = next;
      waiting = waitingNow;
      yield { event: "progress", data: progressOf(run, counts, waiting, deps) };
    }
  }
}

/** The status a reader sees (a dead owner's run is interrupted), the counts, the rate waits. */
function progressOf(
  run: Run,
  counts: RunCounts,
  waiting: number,
  deps: AppDeps,
): FollowProgressView {
  return {
    status: runAsRead(run, deps.engine).run.status,
    ...countsView(counts),
    ...(waiting > 0 ? { rateWaiting: waiting } : {}),
  };
}

/** Requests of the run waiting on a rate limit now, as its processes last recorded them. */
async function rateWaiting(deps: AppDeps, runId: string): Promise<number> {
  const waits = await deps.store.rates.listWaits(runId);
  return waits.reduce((sum, w) => sum + (w.waiting ?? 0), 0);
}

/**
 * Running with a live owner: a dead owner's run will not progress until someone resumes it. A
 * distributed run has no owner: it is live while it is running, since any worker may join it
 * and the last one to leave settles its status.
 */
function isLive(run: Run, deps: AppDeps): boolean {
  if (run.status !== "running") return false;
  return run.config.distributed === true || !!withLiveness(run.owner, deps.engine)?.alive;
}

/** The final event: a dead owner's run reads as interrupted (`runAsRead`), with the reason. */
function ended(stored: Run, counts: RunCounts, deps: AppDeps): FollowCompletedView {
  const { run, owner, orphaned } = runAsRead(stored, deps.engine);
  return {
    status: run.status,
    note: run.note,
    ...countsView(counts),
    ...(orphaned ? { orphaned, reason: owner?.reason } : {}),
  };
}

function countsView({ total, scored, errored, remaining }: RunCounts): CountsView {
  return { total, done: scored, errored, remaining };
}

function sameCounts(a: RunCounts, b: RunCounts): boolean {
  return a.scored === b.scored && a.errored === b.errored && a.total === b.total;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
