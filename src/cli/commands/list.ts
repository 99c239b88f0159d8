import { runModel } from "../../core/run-model.js";
import { isStetError } from "../../core/errors.js";
import { formatLabels, parseLabels } from "../../core/labels.js";
import { listRunsWithFigures } from "../../runs/list-run-figures.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { createIo } from "../io.js";
import { openStore, storeLocation } from "../open-store.js";
import { formatCount, table } from "../render/format.js";
import { listedStatus } from "../render/workers.js";
import { runBatches } from "../../runs/run-batches.js";
import { isOpenBatch, type RunBatches } from "../../core/batch.js";

/**
 * `stet list`: runs with status and progress, newest first; a batched run says how many provider
 * batches it waits on, and since when (a run left by `stet run --detach` waits with no owner). A
 * run whose owner died is recovered (interrupted, resumable) before it is listed, so it never
 * shows as running. Only an existing store is opened: where there is none yet, there are no runs,
 * and none is created.
 */
export async function listCommand(flags: {
  store?: string;
  json?: boolean;
  label?: string[];
}): Promise<number> {
  const io = createIo(flags.json ?? false);
  const labels = parseLabels(flags.label ?? [], "--label");
  const stale = staleLimit();
  const store = await openStore(flags.store, { create: false, ...stale }).catch(
    (error: unknown) => {
      // A project where nothing has run yet: no runs to list, and no store made to say so.
      if (isStetError(error, "E_STORE") && error.details?.state === "missing") return null;
      throw error;
    },
  );
  if (store === null) {
    if (flags.json) io.stdout.write("[]\n");
    else io.say(`no runs in ${storeLocation(flags.store)} (no store there yet)`);
    return 0;
  }
  try {
    // With each run's metrics, folded as its report is, from one read of the store.
    const runs = await listRunsWithFigures(store, { labels }, { ...stale, recover: true });
    const batches = await runBatches(
      store,
      runs.map((r) => r.run.id),
    );
    const rows = runs.map(({ run, counts, activeWorkers, metrics }) => ({
      id: run.id,
      eval: run.evalName,
      status: run.status,
      distributed: run.config.distributed === true,
      // A distributed run's workers executing it now (active, lease live); absent otherwise.
      ...(activeWorkers === undefined ? {} : { workers: activeWorkers }),
      total: counts.total,
      done: counts.scored,
      errored: counts.errored,
      remaining: counts.remaining,
      // The first scorer's mean over the run's outcomes: the listing's score (null before any).
      score: metrics[0] ? { scorer: metrics[0].scorer, mean: metrics[0].mean } : null,
      model: runModel(run.config) ?? null,
      createdAt: run.createdAt,
      updatedAt: run.updatedAt,
      labels: run.labels,
      // A batched run's provider batches: how many it waits on, each one's age and requests.
      ...(batches.has(run.id) ? { batches: batches.get(run.id)! } : {}),
    }));
    if (flags.json) {
      io.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    if (rows.length === 0) {
      const matching = Object.keys(labels).length > 0 ? ` labelled ${formatLabels(labels)}` : "";
      io.say(`no runs${matching} in ${store.location}`);
      return 0;
    }
    // The labels column only when a listed run has labels: most stores' runs have none.
    const labelled = rows.some((r) => Object.keys(r.labels).length > 0);
    const header = ["id", "eval", "status", "done", "errored", "score", "created"];
    if (labelled) header.push("labels");
    const cells = rows.map((r) => [
      r.id,
      r.eval,
      waitingStatus(listedStatus(r.status, r.workers), r.batches),
      `${formatCount(r.done)}/${formatCount(r.total)}`,
      formatCount(r.errored),
      r.score?.mean == null ? "—" : `${r.score.scorer} ${r.score.mean.toFixed(4)}`,
      r.createdAt.replace("T", " ").slice(0, 19),
      ...(labelled ? [formatLabels(r.labels)] : []),
    ]);
    const right = [false, false, false, true, true, false, false, false];
    io.say(table([header, ...cells], right.slice(0, header.length)));
    return 0;
  } finally {
    await store.close();
  }
}

/**
 * A run's status with the provider batches it waits on, and the oldest one's age.
 *
 * @example waitingStatus("interrupted", batches) // "interrupted, waiting on 1 batch (20 requests, 3m)"
 */
function waitingStatus(status: string, batches: RunBatches | undefined): string {
  if (!batches || batches.waiting === 0) return status;
  const open = batches.batches.filter((b) => isOpenBatch(b.status));
  const oldest = Math.max(...open.map((b) => b.ageMs));
  const n = batches.waiting;
  return `${status}, waiting on ${n} batch${n === 1 ? "" : "es"} (${formatCount(batches.waitingRequests)} requests, ${age(oldest)})`;
}

function age(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours}h${minutes % 60}m` : `${Math.floor(hours / 24)}d`;
}
