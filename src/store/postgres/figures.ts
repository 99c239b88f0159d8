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
import { scoringFilterParams, toScoring, type ScoringRow } from "../scoring-rows.js";
import type { Pool } from "pg";
import { statement, transaction, type Queryable } from "./driver.js";
import { postgresStatements as sql } from "./statements.js";
import {
  RERUN_COUNT_UPSERT,
  rerunFactsStatements,
  toRerunFacts,
  type RerunCountRow,
} from "../rerun-facts.js";
import type { RerunFact } from "../types.js";

const RERUN_FACTS = rerunFactsStatements("postgres");

/**
 * Some samples of a run (by id) with their fingerprint and figures, each looked up through its
 * primary key by a subquery of its own: an index lookup per id whatever the plan. (Joined, with
 * the ids an array parameter, the plans read every sample of the run: by `= ANY`, whose
 * collation is not the key columns' "C", 30 ms a commit at 10,000 samples; by a join on
 * unnest, a hash join of the run's samples, 3-12 ms.) A sample not in the snapshot has a NULL
 * fingerprint and is left out by the caller.
 */
const SAMPLES_BY_ID = `k.sample_id,
  (SELECT s.fingerprint FROM samples s
    WHERE s.run_id = @runId AND s.sample_id = k.sample_id COLLATE "C") AS fingerprint,
  (SELECT f.figures FROM sample_figures f
    WHERE f.run_id = @runId AND f.sample_id = k.sample_id COLLATE "C") AS figures`;

/** The per-run figures' statements (migration 16). */
const figures = {
  runFigures: statement(`SELECT figures FROM run_figures WHERE run_id = @runId`, { prepare: true }),
  // The run's row lock, for a build: a commit takes it too, so none interleaves with a build.
  lockRun: statement(`SELECT 1 FROM runs WHERE id = @runId FOR NO KEY UPDATE`),
  putRun: statement(
    `INSERT INTO run_figures (run_id, figures) VALUES (@runId, @figures)
       ON CONFLICT (run_id) DO UPDATE SET figures = excluded.figures`,
    { prepare: true },
  ),
  samplesBefore: statement(
    `SELECT ${SAMPLES_BY_ID} FROM unnest(@sampleIds::text[]) AS k(sample_id)`,
    { prepare: true },
  ),
  // A commit's one read: the run's figures beside each touched sample's fingerprint and figures,
  // and whether the run has a re-run request open.
  commitBefore: statement(
    `SELECT ${SAMPLES_BY_ID},
         (SELECT r.figures FROM run_figures r WHERE r.run_id = @runId) AS run,
         EXISTS (SELECT 1 FROM rerun_counts c WHERE c.run_id = @runId AND c.n > 0) AS reruns_open
       FROM unnest(@sampleIds::text[]) AS k(sample_id)`,
    { prepare: true },
  ),
  // A commit's one write: the changed samples' figures and the run's, in one statement.
  putAll: statement(
    `WITH samples_put AS (
       INSERT INTO sample_figures (run_id, sample_id, figures, errored)
         SELECT @runId, * FROM unnest(@sampleIds::text[], @figures::text[], @errored::int[])
         ON CONFLICT (run_id, sample_id) DO UPDATE
         SET figures = excluded.figures, errored = excluded.errored)
     INSERT INTO run_figures (run_id, figures) VALUES (@runId, @run)
       ON CONFLICT (run_id) DO UPDATE SET figures = excluded.figures`,
    { prepare: true },
  ),
  sampleAttempts: statement(
    `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now WHERE run_id = @runId AND sample_id = @sampleId
       ORDER BY epoch, attempt`,
  ),
  erroredSamples: statement(
    `SELECT sample_id, figures FROM sample_figures WHERE run_id = @runId AND errored > 0
       AND sample_id > @after ORDER BY sample_id LIMIT 200`,
  ),
  fingerprints: statement(`SELECT sample_id, fingerprint FROM samples WHERE run_id = @runId`),
  // The open re-run requests' counts (`store/rerun-facts.ts`): the facts of the requests of some
  // samples computed again and the counts of those that moved moved, in one statement.
  rerunFactsAfter: statement(
    `WITH x AS (${RERUN_FACTS.factRows}),
     moved AS (
       UPDATE rerun_requests AS r SET fact = x.now FROM x
       WHERE r.run_id = x.run_id AND r.sample_id = x.sample_id AND r.epoch = x.epoch
         AND r.fact IS DISTINCT FROM x.now
       RETURNING x.was, x.now),
     delta AS (
       SELECT fact, sum(n)::int AS n FROM (
         SELECT was AS fact, -1 AS n FROM moved WHERE was IS NOT NULL
         UNION ALL SELECT now, 1 FROM moved WHERE now IS NOT NULL) AS m
       GROUP BY fact HAVING sum(n) <> 0)
     INSERT INTO rerun_counts (run_id, fact, n) SELECT @runId, fact, n FROM delta
     ${RERUN_COUNT_UPSERT}`,
    { prepare: true },
  ),
  rerunCounts: statement(RERUN_FACTS.counts, { prepare: true }),
  clearRerunCounts: statement(RERUN_FACTS.clearCounts),
  setRerunFacts: statement(RERUN_FACTS.setFacts),
  countRerunFacts: statement(RERUN_FACTS.countFacts),
};

interface BeforeRow {
  sample_id: string;
  /** `commitBefore`'s only: whether the run has a re-run request open. */
  reruns_open?: boolean;
  /** NULL: not a sample of the run. */
  fingerprint: string | null;
  figures: string | null;
}

/** The rows of samples in the run's snapshot. */
function inSnapshot<R extends BeforeRow>(rows: R[]): (R & { fingerprint: string })[] {
  return rows.filter((r): r is R & { fingerprint: string } => r.fingerprint !== null);
}

/**
 * Inside a commit's transaction, under the run's row lock: the run's figures after its attempts,
 * from the drafts in hand (one read and one write whatever the batch's size). A run without
 * figures (stored before migration 16) is left to the first read that needs them.
 */
export async function figuresAfterAttempts(
  held: HeldFigures,
  tx: Queryable,
  runId: string,
  attempts: readonly FoldedAttempt[],
): Promise<void> {
  const before = await readFiguresBefore(tx, runId, attempts);
  await writeFiguresAfter(held, tx, runId, before, attempts);
}

/** What `writeFiguresAfter` starts from: the run's figures and each touched sample's. */
export type FiguresBefore = (BeforeRow & { run: string | null })[];

/** A commit's one read of figures: the run's beside each touched sample's fingerprint and figures. */
export async function readFiguresBefore(
  tx: Queryable,
  runId: string,
  attempts: readonly { sampleId: string }[],
): Promise<FiguresBefore> {
  if (attempts.length === 0) return [];
  return figures.commitBefore.rows<BeforeRow & { run: string | null }>(tx, {
    runId,
    sampleIds: [...new Set(attempts.map((a) => a.sampleId))],
  });
}

/** A commit's one write of figures: `before` (read under the run's row lock) after `attempts`. */
export async function writeFiguresAfter(
  held: HeldFigures,
  tx: Queryable,
  runId: string,
  rows: FiguresBefore,
  attempts: readonly FoldedAttempt[],
): Promise<void> {
  const text = rows[0]?.run;
  if (attempts.length === 0) return;
  // Each write sent before any answer is awaited (a pipelined commit sends COMMIT behind them).
  const writes: Promise<void>[] = [];
  if (text) {
    const run = parseRun(held, runId, text);
    const before = new Map<string, SampleBefore>(
      inSnapshot(rows).map((r) => [
        r.sample_id,
        { fingerprint: r.fingerprint, figures: sample(r.figures) },
      ]),
    );
    writes.push(write(held, tx, runId, run, applyAttempts(run, before, attempts)));
  }
  // New attempts reopen no request that is done: only open ones can move.
  if (rows[0]?.reruns_open) {
    writes.push(rerunFactsAfter(tx, runId, [...new Set(attempts.map((a) => a.sampleId))]));
  }
  await Promise.all(writes);
}

/**
 * Inside a write's transaction, after it: the facts of the requests of `sampleIds` computed again
 * and the counts of those that moved moved (`store/rerun-facts.ts`).
 */
async function rerunFactsAfter(tx: Queryable, runId: string, sampleIds: string[]): Promise<void> {
  await figures.rerunFactsAfter.run(tx, { runId, sampleIds });
}

/**
 * Inside a write's transaction, after it wrote the run's requests (recorded, replaced, cleared)
 * or built its figures: every request's fact computed again and the counts from nothing.
 */
export async function rebuildRerunFacts(tx: Queryable, runId: string): Promise<void> {
  await figures.clearRerunCounts.run(tx, { runId });
  await figures.setRerunFacts.run(tx, { runId });
  await figures.countRerunFacts.run(tx, { runId });
}

/** The facts of the run's open requests as a report's plan counts them (`reads.rerunFacts`). */
export async function readRerunFacts(db: Queryable, runId: string): Promise<RerunFact[]> {
  return toRerunFacts(await figures.rerunCounts.rows<RerunCountRow>(db, { runId }));
}

/**
 * Inside a transaction, under the run's row lock, that scored stored outputs again or changed
 * samples' content: those samples' figures recomputed from their attempts as they read now.
 */
export async function figuresAfterRescore(
  held: HeldFigures,
  tx: Queryable,
  runId: string,
  sampleIds: Iterable<string>,
  scorings: readonly ScoringDraft[] = [],
): Promise<void> {
  const ids = [...new Set(sampleIds)];
  // A scoring or a sample's new content may move any request of the samples, a done one too.
  const run = await runFigures(held, tx, runId);
  if (!run) return rerunFactsAfter(tx, runId, ids);
  for (const scoring of scorings) run.addScoring(scoring);
  const rows = inSnapshot(
    await figures.samplesBefore.rows<BeforeRow>(tx, { runId, sampleIds: ids }),
  );
  const head = attemptMapper(runId).head;
  const after = new Map<string, SampleFigures>();
  for (const row of rows) {
    const params = { runId, sampleId: row.sample_id };
    const attempts = (await figures.sampleAttempts.tuples<AttemptHeadRow>(tx, params)).map(head);
    after.set(row.sample_id, recomputeSample(run, sample(row.figures), attempts, row.fingerprint));
  }
  await write(held, tx, runId, run, after);
  await rerunFactsAfter(tx, runId, ids);
}

/**
 * A run's figures for a report, with its error examples and the outcomes of `keys`; built from
 * every row, under the run's lock, when the run has none yet.
 */
export async function readFigures(
  held: HeldFigures,
  pool: Pool,
  runId: string,
  reducer: Reducer,
  keys: readonly Key[],
): Promise<StoredFiguresRead> {
  const run =
    (await runFigures(held, pool, runId)) ??
    (await transaction(pool, async (tx) => {
      await figures.lockRun.run(tx, { runId });
      return (await runFigures(held, tx, runId)) ?? build(held, tx, runId, reducer);
    }));
  const collector = new ExampleCollector(run.errorsByType);
  for (let after = ""; !collector.done;) {
    const page = await figures.erroredSamples.rows<{ sample_id: string; figures: string }>(pool, {
      runId,
      after,
    });
    for (const row of page) collector.add(row.sample_id, parseSampleFigures(row.figures));
    if (page.length < 200) break;
    after = page[page.length - 1]!.sample_id;
  }
  const samples = new Map<string, SampleFigures>();
  if (keys.length > 0) {
    const rows = await figures.samplesBefore.rows<BeforeRow>(pool, {
      runId,
      sampleIds: [...new Set(keys.map((k) => k.sampleId))],
    });
    for (const r of rows) if (r.figures) samples.set(r.sample_id, parseSampleFigures(r.figures));
  }
  return { figures: run, examples: collector.examples, keys: keysOf(keys, samples) };
}

/** A new run's figures, inside its create's transaction: none yet, kept from its first commit. */
export async function createFigures(tx: Queryable, runId: string, reducer: Reducer) {
  const { run } = buildFigures(reducer, new Map(), [], []);
  await figures.putRun.run(tx, { runId, figures: JSON.stringify(run) });
}

async function build(
  held: HeldFigures,
  tx: Queryable,
  runId: string,
  reducer: Reducer,
): Promise<RunFigures> {
  const rows = await figures.fingerprints.rows<{ sample_id: string; fingerprint: string }>(tx, {
    runId,
  });
  const fingerprints = new Map(rows.map((r) => [r.sample_id, r.fingerprint]));
  const head = attemptMapper(runId).head;
  const attempts = (await sql.listAttemptHeads.tuples<AttemptHeadRow>(tx, { runId })).map(head);
  const scoringRows = await sql.listScorings.rows<ScoringRow>(tx, scoringFilterParams(runId));
  const scorings = scoringRows.map((row) => toScoring(runId, row));
  const built = buildFigures(reducer, fingerprints, attempts, scorings);
  await write(held, tx, runId, built.run, built.samples);
  // The requests' facts read the samples' figures, which were not there before.
  await rebuildRerunFacts(tx, runId);
  return built.run;
}

async function write(
  held: HeldFigures,
  tx: Queryable,
  runId: string,
  run: RunFigures,
  samples: ReadonlyMap<string, SampleFigures>,
): Promise<void> {
  const changed = [...samples];
  const text = JSON.stringify(run);
  const put = figures.putAll.run(tx, {
    runId,
    sampleIds: changed.map(([id]) => id),
    figures: changed.map(([, f]) => JSON.stringify(f)),
    errored: changed.map(([, f]) => erroredKeys(f)),
    run: text,
  });
  // Held as sent: should the transaction roll back, the stored text is not this one.
  held.set(runId, { text, run });
  await put;
}

/**
 * The run figures a store wrote last, parsed, by run (`PostgresContext.lastFigures`): when the
 * stored text is still that text (nobody committed since), they are taken instead of parsing it
 * again. Taken, not shared: the caller changes them and only a write puts them back, so a
 * transaction that rolls back leaves nothing stale (the stored text is then not the one held).
 */
export type HeldFigures = Map<string, { text: string; run: RunFigures }>;

function parseRun(lastWritten: HeldFigures, runId: string, text: string): RunFigures {
  const held = lastWritten.get(runId);
  lastWritten.delete(runId);
  return held?.text === text ? held.run : parseRunFigures(text);
}

async function runFigures(
  held: HeldFigures,
  db: Queryable,
  runId: string,
): Promise<RunFigures | undefined> {
  const [row] = await figures.runFigures.rows<{ figures: string }>(db, { runId });
  return row ? parseRun(held, runId, row.figures) : undefined;
}

function sample(text: string | null): SampleFigures | undefined {
  return text === null ? undefined : parseSampleFigures(text);
}
