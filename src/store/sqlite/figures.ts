import type { FoldedAttempt } from "../../core/outcome-fold.js";
import type { RunFigures, SampleFigures } from "../../core/run-figures.js";
import type { Key, Reducer, ScoringDraft } from "../../core/types.js";
import {
  ExampleCollector,
  applyAttempts,
  buildFigures,
  erroredKeys,
  keysOf,
  parseRunFigures,
  parseSampleFigures,
  recomputeSample,
  type SampleBefore,
  type StoredFiguresRead,
} from "../figures-rows.js";
import { ATTEMPT_HEAD_COLUMNS, attemptMapper, type AttemptHeadRow } from "../rows.js";
import { scoringFilterParams, toScoring } from "../scoring-rows.js";
import type { SqliteContext } from "./context.js";
import { immediate } from "./driver.js";
import { ROWS_PER_STATEMENT, rowWriter, sql, valuesRows, type Prepared } from "./statements.js";
import { rerunFactsStatements, toRerunFacts, type RerunCountRow } from "../rerun-facts.js";
import type { RerunFact } from "../types.js";

const RERUN_FACTS = rerunFactsStatements("sqlite");

/** The upsert of `rows` samples' figures, each four parameters: run, sample, figures, errored. */
function putSamples(rows: number) {
  return sql(
    `INSERT INTO sample_figures (run_id, sample_id, figures, errored) VALUES ${valuesRows(4, rows)}
       ON CONFLICT (run_id, sample_id) DO UPDATE
       SET figures = excluded.figures, errored = excluded.errored`,
  );
}

/** The statements of the per-run figures (migration 17), prepared on first use. */
export const SQLITE_FIGURES_STATEMENTS = {
  runFigures: sql<{ figures: string }>(`SELECT figures FROM run_figures WHERE run_id = ?`),
  putRun: sql(
    `INSERT INTO run_figures (run_id, figures) VALUES (?, ?)
       ON CONFLICT (run_id) DO UPDATE SET figures = excluded.figures`,
  ),
  sampleBefore: sql<{ fingerprint: string; figures: string | null }>(
    `SELECT s.fingerprint, f.figures FROM samples s
       LEFT JOIN sample_figures f ON f.run_id = s.run_id AND f.sample_id = s.sample_id
       WHERE s.run_id = ? AND s.sample_id = ?`,
  ),
  putSample: putSamples(1),
  // Samples' figures, ROWS_PER_STATEMENT a statement (`rowWriter`; the rest one by one).
  putSampleRows: putSamples(ROWS_PER_STATEMENT),
  sampleAttempts: {
    ...sql<AttemptHeadRow>(
      `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now WHERE run_id = ? AND sample_id = ?
         ORDER BY epoch, attempt`,
    ),
    raw: true,
  },
  erroredSamples: sql<{ sample_id: string; figures: string }>(
    `SELECT sample_id, figures FROM sample_figures WHERE run_id = ? AND errored > 0
       ORDER BY sample_id`,
  ),
  fingerprints: sql<{ sample_id: string; fingerprint: string }>(
    `SELECT sample_id, fingerprint FROM samples WHERE run_id = ?`,
  ),
  // The open re-run requests' counts (`store/rerun-facts.ts`).
  rerunCounts: sql<RerunCountRow>(RERUN_FACTS.counts),
  rerunFactRows: sql<{ sample_id: string; epoch: number; was: string | null; now: string | null }>(
    RERUN_FACTS.factRows,
  ),
  setRerunFact: sql(
    `UPDATE rerun_requests SET fact = @fact
       WHERE run_id = @runId AND sample_id = @sampleId AND epoch = @epoch`,
  ),
  addRerunCount: sql(RERUN_FACTS.addCount),
  clearRerunCounts: sql(RERUN_FACTS.clearCounts),
  setRerunFacts: sql(RERUN_FACTS.setFacts),
  countRerunFacts: sql(RERUN_FACTS.countFacts),
};

export type FiguresStatements = Prepared<typeof SQLITE_FIGURES_STATEMENTS>;

/**
 * Inside a commit's transaction: the run's figures after its attempts, from the drafts in hand.
 * A run without figures (stored before migration 17) is left to the first read that needs them.
 */
export function figuresAfterAttempts(
  c: SqliteContext,
  runId: string,
  attempts: readonly FoldedAttempt[],
  /** Each touched sample's fingerprint and figures before the batch (read with its key state). */
  before: ReadonlyMap<string, SampleBefore>,
  /** Whether the run had a re-run request open before the batch (`leftOpen`). */
  reruns: boolean,
): void {
  if (attempts.length === 0) return;
  const run = runFigures(c, runId);
  if (run) {
    writeSamples(c, runId, applyAttempts(run, before, attempts));
    putRun(c, runId, run);
  }
  // New attempts reopen no request that is done: only open ones can move.
  if (reruns) {
    rerunFactsAfter(
      c,
      runId,
      attempts.map((a) => a.sampleId),
    );
  }
}

/**
 * Inside a transaction that scored stored outputs again or changed samples' content: the
 * samples' figures recomputed from their attempts as they read now, and the scorings' spend.
 */
export function figuresAfterRescore(
  c: SqliteContext,
  runId: string,
  sampleIds: Iterable<string>,
  scorings: readonly ScoringDraft[] = [],
): void {
  const ids = [...new Set(sampleIds)];
  // A scoring or a sample's new content may move any request of the samples, a done one too.
  const run = runFigures(c, runId);
  if (!run) return rerunFactsAfter(c, runId, ids);
  for (const scoring of scorings) run.addScoring(scoring);
  const head = attemptMapper(runId).head;
  const after = new Map<string, SampleFigures>();
  for (const sampleId of ids) {
    const row = c.figures.sampleBefore.get(runId, sampleId);
    if (!row) continue;
    const attempts = c.figures.sampleAttempts.all(runId, sampleId).map(head);
    after.set(
      sampleId,
      recomputeSample(run, sampleFigures(row.figures), attempts, row.fingerprint),
    );
  }
  writeSamples(c, runId, after);
  putRun(c, runId, run);
  rerunFactsAfter(c, runId, ids);
}

/**
 * Inside a write's transaction, after it: the facts of the requests of `sampleIds` computed again
 * and the counts of those that moved moved (`store/rerun-facts.ts`).
 */
function rerunFactsAfter(c: SqliteContext, runId: string, sampleIds: readonly string[]): void {
  const moved = new Map<string, number>();
  const move = (fact: string | null, n: number) => {
    if (fact !== null) moved.set(fact, (moved.get(fact) ?? 0) + n);
  };
  const rows = c.figures.rerunFactRows.all({ runId, sampleIds: JSON.stringify(sampleIds) });
  for (const { sample_id: sampleId, epoch, was, now } of rows) {
    if (was === now) continue;
    c.figures.setRerunFact.run({ runId, sampleId, epoch, fact: now });
    move(was, -1);
    move(now, 1);
  }
  for (const [fact, n] of moved) if (n !== 0) c.figures.addRerunCount.run({ runId, fact, n });
}

/**
 * Inside a write's transaction, after it wrote the run's requests (recorded, replaced, cleared)
 * or built its figures: every request's fact computed again and the counts from nothing.
 */
export function rebuildRerunFacts(c: SqliteContext, runId: string): void {
  c.figures.clearRerunCounts.run({ runId });
  c.figures.setRerunFacts.run({ runId });
  c.figures.countRerunFacts.run({ runId });
}

/** The facts of the run's open requests as a report's plan counts them (`reads.rerunFacts`). */
export function readRerunFacts(c: SqliteContext, runId: string): RerunFact[] {
  return toRerunFacts(c.figures.rerunCounts.all({ runId }));
}

/**
 * A run's figures for a report, with its error examples and the outcomes of `keys`; built from
 * every attempt (and kept from then on) when the run has none yet.
 *
 * @example const { figures } = readFigures(c, "r_1", "mean", []);
 */
export function readFigures(
  c: SqliteContext,
  runId: string,
  reducer: Reducer,
  keys: readonly Key[],
): StoredFiguresRead {
  let figures = runFigures(c, runId);
  if (!figures) figures = immediate(c.db, () => runFigures(c, runId) ?? build(c, runId, reducer));
  const collector = new ExampleCollector(figures.errorsByType);
  if (!collector.done) {
    for (const row of c.figures.erroredSamples.iterate(runId)) {
      collector.add(row.sample_id, parseSampleFigures(row.figures));
      if (collector.done) break;
    }
  }
  const samples = new Map<string, SampleFigures>();
  for (const { sampleId } of keys) {
    const row = c.figures.sampleBefore.get(runId, sampleId);
    if (row?.figures) samples.set(sampleId, parseSampleFigures(row.figures));
  }
  return { figures, examples: collector.examples, keys: keysOf(keys, samples) };
}

/** Inside an IMMEDIATE transaction: the run's figures from every stored row, written. */
function build(c: SqliteContext, runId: string, reducer: Reducer): RunFigures {
  const fingerprints = new Map(
    c.figures.fingerprints.all(runId).map((r) => [r.sample_id, r.fingerprint]),
  );
  const head = attemptMapper(runId).head;
  const attempts = c.s.listAttemptHeads.all(runId).map(head);
  const scorings = c.s.listScorings
    .all(scoringFilterParams(runId))
    .map((row) => toScoring(runId, row));
  const { run, samples } = buildFigures(reducer, fingerprints, attempts, scorings);
  writeSamples(c, runId, samples);
  putRun(c, runId, run);
  // The requests' facts read the samples' figures, which were not there before.
  rebuildRerunFacts(c, runId);
  return run;
}

/** A new run's figures: none yet, kept from its first commit on. */
export function createFigures(c: SqliteContext, runId: string, reducer: Reducer): void {
  putRun(c, runId, emptyFigures(reducer));
}

function emptyFigures(reducer: Reducer): RunFigures {
  return buildFigures(reducer, new Map(), [], []).run;
}

/**
 * The run's figures as stored. The last ones this connection wrote are kept parsed beside their
 * text: when the stored text is still that text (no other process committed since), they are
 * taken instead of parsing it again. Taken, not shared: the caller changes them, and only a
 * successful write (`putRun`) puts them back, so a transaction that rolls back leaves nothing
 * stale behind.
 */
function runFigures(c: SqliteContext, runId: string): RunFigures | undefined {
  const row = c.figures.runFigures.get(runId);
  if (!row) return undefined;
  const held = c.lastFigures.get(runId);
  c.lastFigures.delete(runId);
  return held?.text === row.figures ? held.run : parseRunFigures(row.figures);
}

function putRun(c: SqliteContext, runId: string, run: RunFigures): void {
  const text = JSON.stringify(run);
  c.figures.putRun.run(runId, text);
  c.lastFigures.set(runId, { text, run });
}

/** A `sample_figures` column as read (NULL: the sample has none yet). */
export function sampleFigures(text: string | null): SampleFigures | undefined {
  return text === null ? undefined : parseSampleFigures(text);
}

/**
 * Samples' figures, written ROWS_PER_STATEMENT to a statement (`rowWriter`): the one place a
 * `sample_figures` row is built, for a commit, a rescore and a build alike.
 */
function writeSamples(
  c: SqliteContext,
  runId: string,
  samples: ReadonlyMap<string, SampleFigures>,
): void {
  const rows = rowWriter(c.figures.putSample, c.figures.putSampleRows, 4);
  for (const [sampleId, figures] of samples) {
    rows.push(runId, sampleId, JSON.stringify(figures), erroredKeys(figures));
  }
  rows.end();
}
