import type { BenchmarkCellView, BenchmarkView } from "../api/contract.js";
import { reduceEpochs } from "../core/aggregate.js";
import { byteOrder } from "../core/keys.js";
import { scoresStand } from "../core/outcomes.js";
import type { Run } from "../core/types.js";
import { runReport } from "../runs/read-run.js";
import type { OutcomeEntry, Store } from "../store/types.js";
import { runSummary } from "./run-view.js";

/**
 * A benchmark side by side: per run (model, status, counts, metrics, cost: its report from the
 * figures the store keeps, as `stet show` reads it) and per sample (each run's reduced scores)
 * for one page of the sample ids the runs have between them. The runs are those whose eval name
 * is the benchmark's, so a run appears once however often it was resumed. Flat in the runs' size:
 * the ids are merged from the snapshots' pages, and only the page's samples' outcomes are read.
 *
 * @example (await benchmarkView(store, "arithmetic", { limit: 50, offset: 0 }, 30_000))?.runs
 */
export async function benchmarkView(
  store: Store,
  evalName: string,
  page: { limit: number; offset: number },
  staleMs: number | undefined,
): Promise<BenchmarkView | undefined> {
  const listed = await store.reads.listRuns({ evalName });
  if (listed.length === 0) return undefined;
  const reports = await Promise.all(listed.map(({ run }) => runReport(store, run)));
  const runs = listed.map(({ run, counts }, i) => ({
    ...runSummary(run, counts, staleMs),
    metrics: reports[i]!.metrics,
    cost: { spent: reports[i]!.usage.totalSpent },
  }));
  const ids = await sampleIdPage(
    store,
    listed.map(({ run }) => run.id),
    page,
  );
  const entries = [];
  for (const sampleId of ids.page) {
    const found = await Promise.all(
      listed.map(({ run }) => store.reads.listOutcomes(run.id, { sampleId })),
    );
    const cells: Record<string, BenchmarkCellView | null> = {};
    listed.forEach(({ run }, i) => (cells[run.id] = cell(run, found[i]!.entries)));
    const first = found.find((f) => f.entries.length > 0)!.entries[0]!;
    const prints = new Set(Object.values(cells).flatMap((c) => (c ? [c.fingerprint] : [])));
    entries.push({
      sampleId,
      input: first.sample.input,
      target: first.sample.target ?? null,
      /** The runs saw different content under this id (the dataset changed between them). */
      differs: prints.size > 1,
      runs: cells,
    });
  }
  return {
    id: evalName,
    evalName,
    runs,
    scorers: [...new Set(listed.flatMap(({ run }) => run.config.scorers))],
    samples: { total: ids.total, limit: page.limit, offset: page.offset, entries },
  };
}

/**
 * The sample ids the runs have between them, each once, in byte order: how many, and those of the
 * page. Merged from each run's snapshot pages (byte-ordered too), so nothing but a page of each
 * run's ids is held, however many samples the runs have.
 */
async function sampleIdPage(
  store: Store,
  runIds: readonly string[],
  page: { limit: number; offset: number },
): Promise<{ total: number; page: string[] }> {
  const streams = runIds.map((id) => idStream(store.reads.sampleFingerprintPages(id)));
  const heads = await Promise.all(streams.map((s) => s.next()));
  const out: string[] = [];
  let total = 0;
  for (;;) {
    let least: string | undefined;
    for (const head of heads) {
      if (!head.done && (least === undefined || byteOrder(head.value, least) < 0)) {
        least = head.value;
      }
    }
    if (least === undefined) return { total, page: out };
    if (total >= page.offset && out.length < page.limit) out.push(least);
    total++;
    for (let i = 0; i < heads.length; i++) {
      if (!heads[i]!.done && heads[i]!.value === least) heads[i] = await streams[i]!.next();
    }
  }
}

async function* idStream(
  pages: AsyncIterable<{ sampleId: string }[]>,
): AsyncGenerator<string, void, undefined> {
  for await (const page of pages) for (const { sampleId } of page) yield sampleId;
}

/** A run's cell of one sample: its outcomes' (one per epoch) counts and reduced scores. */
function cell(run: Run, entries: readonly OutcomeEntry[]): BenchmarkCellView | null {
  const record = entries[0];
  if (!record) return null;
  const mine = entries.flatMap((e) => (e.outcome ? [e.outcome] : []));
  const scored = mine.filter((o) => o.status === "scored");
  // The values the metrics average: a scorer error's other scores stand.
  const standing = mine.filter(scoresStand).sort((a, b) => a.epoch - b.epoch);
  const scores: Record<string, number | null> = {};
  for (const scorer of run.config.scorers) {
    const values = standing.flatMap((o) =>
      o.scores.flatMap((s) => (s.scorer === scorer && s.value !== null ? [s.value] : [])),
    );
    scores[scorer] = values.length > 0 ? reduceEpochs(values, run.config.reducer) : null;
  }
  return {
    fingerprint: record.fingerprint,
    scored: scored.length,
    errored: mine.length - scored.length,
    epochs: run.config.epochs,
    scores,
  };
}
