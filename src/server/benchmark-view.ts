import type { BenchmarkCellView, BenchmarkView } from "../api/contract.js";
import {
  addScoringUsage,
  reduceEpochs,
  type ScorerMetrics,
  type UsageTotal,
} from "../core/aggregate.js";
import { OutcomeFold } from "../core/outcome-fold.js";
import { scoresStand, selectOutcomes } from "../core/outcomes.js";
import type { Run, Sample } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";
import { runSummary } from "./run-view.js";

interface RunData {
  run: Run;
  samples: Map<string, { sample: Sample; fingerprint: string }>;
  bySample: Map<string, AttemptHead[]>;
  metrics: ScorerMetrics[];
  spent: UsageTotal;
}

/**
 * A benchmark side by side: per run (model, status, counts, metrics, cost) and per sample (each
 * run's reduced scores), computed from the stored attempts. The runs are those whose eval name
 * is the benchmark's, so a run appears once however often it was resumed.
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
  const data = await Promise.all(listed.map(({ run }) => loadRun(store, run)));
  const runs = listed.map(({ run, counts }, i) => {
    const { metrics, spent } = data[i]!;
    return {
      ...runSummary(run, counts, staleMs),
      metrics,
      cost: { spent },
    };
  });
  const ids = [...new Set(data.flatMap((d) => [...d.samples.keys()]))].sort(binary);
  const entries = ids.slice(page.offset, page.offset + page.limit).map((sampleId) => {
    const first = data.find((d) => d.samples.has(sampleId))!.samples.get(sampleId)!;
    const cells: Record<string, BenchmarkCellView | null> = {};
    for (const d of data) cells[d.run.id] = cell(d, sampleId);
    const prints = new Set(Object.values(cells).flatMap((c) => (c ? [c.fingerprint] : [])));
    return {
      sampleId,
      input: first.sample.input,
      target: first.sample.target ?? null,
      /** The runs saw different content under this id (the dataset changed between them). */
      differs: prints.size > 1,
      runs: cells,
    };
  });
  return {
    id: evalName,
    evalName,
    runs,
    scorers: [...new Set(listed.flatMap(({ run }) => run.config.scorers))],
    samples: { total: ids.length, limit: page.limit, offset: page.offset, entries },
  };
}

async function loadRun(store: Store, run: Run): Promise<RunData> {
  const [records, heads, scorings] = await Promise.all([
    store.reads.getSamples(run.id),
    store.reads.listAttemptHeads(run.id),
    store.reads.listScorings(run.id),
  ]);
  const samples = new Map(records.map((r) => [r.sample.id, r]));
  const fingerprints = new Map(records.map((r) => [r.sample.id, r.fingerprint]));
  const outcomes = selectOutcomes(heads, fingerprints);
  const bySample = new Map<string, AttemptHead[]>();
  for (const o of outcomes) {
    const list = bySample.get(o.sampleId);
    if (list) list.push(o);
    else bySample.set(o.sampleId, [o]);
  }
  // The same fold as a run's report, so a benchmark shows exactly the run's own figures.
  const fold = new OutcomeFold<AttemptHead>({
    fingerprintOf: (id) => fingerprints.get(id),
    scorers: run.config.scorers,
    reducer: run.config.reducer,
    isNow: () => false,
  });
  for (const head of heads) fold.add(head);
  const { metrics, totalSpent: spent } = fold.finish();
  // A judge's scorings are the run's spend too, as in the run's own report (engine/report.ts).
  for (const scoring of scorings) if (scoring.usage) addScoringUsage(spent, scoring.usage);
  return { run, samples, bySample, metrics, spent };
}

function cell(data: RunData, sampleId: string): BenchmarkCellView | null {
  const record = data.samples.get(sampleId);
  if (!record) return null;
  const mine = data.bySample.get(sampleId) ?? [];
  const scored = mine.filter((o) => o.status === "scored");
  // The values the metrics average: a scorer error's other scores stand.
  const standing = mine.filter(scoresStand).sort((a, b) => a.epoch - b.epoch);
  const scores: Record<string, number | null> = {};
  for (const scorer of data.run.config.scorers) {
    const values = standing.flatMap((o) =>
      o.scores.flatMap((s) => (s.scorer === scorer && s.value !== null ? [s.value] : [])),
    );
    scores[scorer] = values.length > 0 ? reduceEpochs(values, data.run.config.reducer) : null;
  }
  return {
    fingerprint: record.fingerprint,
    scored: scored.length,
    errored: mine.length - scored.length,
    epochs: data.run.config.epochs,
    scores,
  };
}

function binary(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
