import { formatLabels } from "../../core/labels.js";
import { runModel } from "../../core/run-model.js";
import { StetError } from "../../core/errors.js";
import type { Json } from "../../core/json.js";
import { trajectoryStep } from "../../evalport/trajectory.js";
import { readRun } from "../../runs/read-run.js";
import { requireRun } from "../../runs/require-run.js";
import { isWorking } from "../../runs/run-workers.js";
import type { Store } from "../../store/types.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { batchesView, describeBatches } from "../render/batches.js";
import { describeCache } from "../render/cache.js";
import { createIo, type Io } from "../io.js";
import { openStore } from "../open-store.js";
import { renderSummary } from "../render/summary.js";
import { listedStatus, workersTable } from "../render/workers.js";
import { hintLine, resumeHint } from "../resume-hint.js";

/**
 * `stet show <run-id>`: status, owner, progress, metrics, cost and errors of one run, and the
 * command that resumes it when it is resumable. A run whose owner died is recovered
 * (interrupted, resumable) first, so it never shows as running.
 */
export async function showCommand(
  runId: string,
  flags: { store?: string; json?: boolean; sample?: string },
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const store = await openStore(flags.store, { create: false, ...stale });
  try {
    if (flags.sample !== undefined) {
      return await showSample(io, store, runId, flags.sample, flags.json ?? false);
    }
    const read = await readRun(store, runId, { ...stale, recover: true });
    const { run, owner, report, workers } = read;
    const cache = await store.cache.stats();
    const batches = await store.batches.list(run.id);
    if (flags.json) {
      const { executed: _e, wallMs: _w, resumed: _r, ...rest } = report;
      const { config, createdAt, updatedAt, note, labels } = run;
      // The fencing token is the owner's own: whoever holds it may write as the owner. Workers'
      // tokens likewise: they are shown by id (`workerId`), never by token.
      const { token: _t, ...shown } = owner ?? { token: "" };
      const distributed = config.distributed === true;
      const view = {
        ...rest,
        config,
        owner: owner && shown,
        distributed,
        ...(workers ? { workers } : {}),
        cache: { entries: cache.entries, bytes: cache.bytes },
        ...(batches.length === 0 ? {} : { batches: batchesView(batches, Date.now()) }),
        createdAt,
        updatedAt,
        note,
        labels,
      };
      io.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
      return 0;
    }
    const working = workers?.filter(isWorking).length;
    const status = listedStatus(run.status, working);
    io.say(`run ${run.id} · ${run.evalName} · ${status}${run.note ? ` (${run.note})` : ""}`);
    io.say(
      `created ${run.createdAt} · model ${runModel(run.config) ?? "(none named by the solver)"} · ${run.config.epochs} epoch(s)`,
    );
    if (Object.keys(run.labels).length > 0) io.say(`labels  ${formatLabels(run.labels)}`);
    if (owner) {
      const liveness = `${owner.alive ? "alive" : "dead"}: ${owner.reason}`;
      io.say(`owner   pid ${owner.pid} on ${owner.host} · ${liveness}`);
    }
    if (workers) {
      io.say(
        workers.length === 0 ? "workers  none joined yet" : `workers\n${workersTable(workers)}`,
      );
    }
    const summary = renderSummary(report).split("\n");
    io.say(summary.filter((l) => !/^(work|time) /.test(l)).join("\n"));
    // The store's, shared by every run: what a run with `cache` may be served from.
    io.say(describeCache(cache));
    const waiting = describeBatches(batches, Date.now());
    if (waiting !== "") io.say(waiting);
    // Interrupted or errored with keys left: the command that finishes it, for this store.
    if ((run.status === "interrupted" || run.status === "errored") && report.counts.remaining > 0) {
      const hint = resumeHint(run.id, flags.store);
      // Stopped by its spend cap, which a resume keeps: only a higher one lets it go on.
      const capped = run.status === "interrupted" && run.note?.startsWith("budget: ");
      const line = capped ? { ...hint, command: `${hint.command} --max-cost <higher usd>` } : hint;
      io.say(`resume   ${hintLine(line)}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

/**
 * `stet show <run-id> --sample <id>`: every attempt of the sample, oldest first, each epoch's
 * outcome marked: its history, re-runs (`--rerun`) and errors included.
 */
async function showSample(
  io: Io,
  store: Store,
  runId: string,
  sampleId: string,
  json: boolean,
): Promise<number> {
  await requireRun(store, runId);
  const [attempts, committed, page, scorings, steps] = await Promise.all([
    store.reads.listAttempts(runId, { sampleId }),
    store.reads.listAttempts(runId, { sampleId, asCommitted: true }),
    store.reads.listOutcomes(runId, { sampleId }),
    store.reads.listScorings(runId, { sampleId }),
    store.journal.list(runId, { sampleId }),
  ]);
  const exact = page.entries.filter((e) => e.sampleId === sampleId);
  if (exact.length === 0) {
    throw new StetError("E_USAGE", `run ${runId} has no sample "${sampleId}"`, {
      details: { runId, sampleId },
    });
  }
  const outcome = new Map(exact.map((e) => [e.epoch, e.outcome?.attempt ?? null]));
  // Each attempt's current scores, and every scoring it had after it was committed (a rescore,
  // a scorer error scored again): the scores of removed scorers stay here.
  const scoringsOf = (a: { epoch: number; attempt: number }) =>
    scorings
      .filter((s) => s.epoch === a.epoch && s.attempt === a.attempt)
      .map(({ runId: _r, sampleId: _s, epoch: _e, attempt: _a, ...s }) => s);
  const history = attempts.map(({ transcript: _t, runId: _r, ...a }, i) => {
    const own = committed[i]!;
    const rescored = scoringsOf(a);
    return {
      ...a,
      outcome: outcome.get(a.epoch) === a.attempt,
      // With scorings: what the attempt's own execution scored, before them.
      ...(rescored.length === 0
        ? {}
        : { asCommitted: { status: own.status, scores: own.scores, error: own.error } }),
      scorings: rescored,
      // Its step journal (ctx.step / ctx.chat): the trajectory.
      journal: steps
        .filter((e) => e.epoch === a.epoch && e.attempt === a.attempt)
        .map(trajectoryStep),
    };
  });
  if (json) {
    const view = { runId, sampleId, sample: exact[0]!.sample, attempts: history };
    io.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    return 0;
  }
  io.say(`run ${runId} · sample ${sampleId} · ${history.length} attempt(s)`);
  const { input, target } = exact[0]!.sample;
  io.say(`input   ${indented(input)}`);
  if (target !== undefined) io.say(`target  ${indented(target)}`);
  for (const a of history) {
    const scores = a.scores.map((sc) => `${sc.scorer}=${sc.value ?? "-"}`).join(" ");
    const what = a.status === "scored" ? scores : `error (${a.error?.type}): ${a.error?.message}`;
    const output = JSON.stringify(a.output) ?? "null";
    // Unknown (absent) on attempts stored before retries were counted.
    const retries = a.retries === undefined ? "" : ` · retries ${a.retries}`;
    const limit = a.limit
      ? ` · limit ${a.limit.limit} (${a.limit.value}; used ${a.limit.used})`
      : "";
    io.say(
      `  epoch ${a.epoch} attempt ${a.attempt}${a.outcome ? " (outcome)" : ""} · ${a.startedAt} · ` +
        `${what}${limit}${retries} · output ${output.length > 80 ? `${output.slice(0, 77)}...` : output}`,
    );
    if (a.journal.length > 0) io.say(`    journal · ${a.journal.length} step(s)`);
    if (a.asCommitted) {
      const values = a.asCommitted.scores.map((v) => `${v.scorer}=${v.value ?? "-"}`).join(" ");
      io.say(`    as committed · ${a.asCommitted.status} · ${values}`);
    }
    for (const sc of a.scorings) {
      const values = sc.scores.map((v) => `${v.scorer}=${v.value ?? "-"}`).join(" ");
      const result = sc.status === "scored" ? values : `error: ${sc.error?.message}`;
      const retried = sc.retries ? ` · retries ${sc.retries}` : "";
      io.say(
        `    scoring ${sc.scoring} · ${sc.scoredAt} · ran ${sc.rescored.join(", ")} · ${result}${retried}`,
      );
    }
  }
  return 0;
}

/** A sample's value as text, its later lines indented under the first one's label. */
function indented(value: Json): string {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return text.replace(/\r?\n/g, "\n        ");
}
