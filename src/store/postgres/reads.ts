import type { Attempt, Key, Reducer, SampleRecord, Scoring } from "../../core/types.js";
import {
  askedFlags,
  readRerunPages,
  type RerunPagesOptions,
  type RerunRow,
} from "../rerun-rows.js";
import type { StoredFiguresRead } from "../figures-rows.js";
import { groupReportInputs, type RunHeadRow, type UsageRow } from "../report-inputs.js";
import { attemptPages, factPages, headPages } from "../attempt-pages.js";
import {
  distinctIds,
  idPages,
  sampleMapper,
  snapshotPages,
  toFingerprint,
  type FingerprintRow,
  type SamplePageRow,
} from "../sample-pages.js";
import {
  attemptMapper,
  toSampleRecord,
  type AttemptFactRow,
  type AttemptHeadRow,
  type AttemptRow,
  type SampleRow,
} from "../rows.js";
import { labelsColumn, toRun } from "../run-rows.js";
import { scoringFilterParams, toScoring, type ScoringRow } from "../scoring-rows.js";
import { SPEND_START } from "../spend-rows.js";
import type {
  AttemptFact,
  AttemptFeed,
  AttemptFilter,
  ScoringFilter,
  AttemptHead,
  BenchmarkSummary,
  OutcomeFilter,
  OutcomePage,
  RunPart,
  ReadModel,
  ReportInputs,
  RunCounts,
  RunFilter,
  RunListing,
  SpendCursor,
  StoredSpend,
} from "../types.js";
import type { DbRun, PostgresContext } from "./context.js";
import { readFigures, readRerunFacts } from "./figures.js";
import { postgresReadModel } from "./read-queries.js";
import type { QueryResultRow } from "pg";
import type { Statement } from "./driver.js";
import { postgresStatements as sql } from "./statements.js";

/** Every read of the PostgreSQL store (`ReadModel`): listings, attempts, outcomes, spend. */
export function postgresReads(c: PostgresContext): ReadModel {
  return {
    ...pagedReads(c),
    ...sampleHeadReads(c),
    async listRuns(filter: RunFilter = {}): Promise<RunListing[]> {
      return c.guard(async () => {
        const rows = await sql.listRuns.rows<DbRun>(c.pool, {
          status: filter.status ?? null,
          evalName: filter.evalName ?? null,
          labels: labelsColumn(filter.labels),
          limit: filter.limit ?? null,
          offset: filter.offset ?? 0,
        });
        return Promise.all(
          rows.map(async (row) => {
            const run = toRun(row, row.db_now_ms);
            return { run, counts: await c.counts(run) };
          }),
        );
      });
    },
    async countKeys(runId: string): Promise<RunCounts> {
      return c.guard(async () => c.counts(await c.requireRun(c.pool, runId)));
    },
    async getSamples(runId: string): Promise<SampleRecord[]> {
      return c.guard(async () => {
        await c.requireRun(c.pool, runId);
        const rows = await sql.getSamples.rows<SampleRow>(c.pool, { runId });
        return rows.map((row) => toSampleRecord(row, runId));
      });
    },
    async listSampleFingerprints(
      runId: string,
    ): Promise<{ sampleId: string; fingerprint: string }[]> {
      return c.guard(async () => {
        await c.requireRun(c.pool, runId);
        const rows = await sql.listSampleFingerprints.rows<{
          sample_id: string;
          fingerprint: string;
        }>(c.pool, { runId });
        return rows.map((row) => ({ sampleId: row.sample_id, fingerprint: row.fingerprint }));
      });
    },
    async listScorings(runId: string, filter: ScoringFilter = {}): Promise<Scoring[]> {
      return c.guard(async () => {
        const rows = await sql.listScorings.rows<ScoringRow>(
          c.pool,
          scoringFilterParams(runId, filter),
        );
        return rows.map((row) => toScoring(runId, row));
      });
    },
    async listAttempts(runId: string, filter: AttemptFilter = {}): Promise<Attempt[]> {
      return c.guard(async () => {
        const statement = filter.asCommitted ? sql.listAttemptsAsCommitted : sql.listAttempts;
        const rows = await statement.tuples<AttemptRow>(c.pool, {
          runId,
          sampleId: filter.sampleId ?? null,
          epoch: filter.epoch ?? null,
        });
        return rows.map(attemptMapper(runId).full);
      });
    },
    async listAttemptHeads(runId: string): Promise<AttemptHead[]> {
      return c.guard(async () => {
        const rows = await sql.listAttemptHeads.tuples<AttemptHeadRow>(c.pool, { runId });
        return rows.map(attemptMapper(runId).head);
      });
    },
    async listOutcomes(runId: string, filter: OutcomeFilter = {}): Promise<OutcomePage> {
      return c.guard(async () => {
        const run = await c.requireRun(c.pool, runId);
        return postgresReadModel.listOutcomes(c.pool, runId, run.config.epochs, filter);
      });
    },
    async listAttemptsAfter(
      runId: string,
      options: { after?: number; limit?: number } = {},
    ): Promise<AttemptFeed> {
      return c.guard(() =>
        postgresReadModel.listAttemptsAfter(c.pool, runId, options.after, options.limit ?? 1_000),
      );
    },
    async readSpend(runId: string, after: SpendCursor = SPEND_START): Promise<StoredSpend> {
      return c.guard(() => postgresReadModel.readSpend(c.pool, runId, after));
    },
    async listReportInputs(runIds: readonly string[]): Promise<Map<string, ReportInputs>> {
      return c.guard(async () => {
        const params = { runIds: [...runIds] };
        const [fingerprints, heads, usage] = await Promise.all([
          sql.reportFingerprints.rows<{ run_id: string; sample_id: string; fingerprint: string }>(
            c.pool,
            params,
          ),
          sql.reportHeads.tuples<RunHeadRow>(c.pool, params),
          sql.reportScoringUsage.rows<UsageRow>(c.pool, params),
        ]);
        return groupReportInputs(runIds, fingerprints, heads, usage);
      });
    },
    async listBenchmarks(): Promise<BenchmarkSummary[]> {
      return c.guard(() => postgresReadModel.listBenchmarks(c.pool));
    },
    async readFigures(
      runId: string,
      reducer: Reducer,
      keys: readonly Key[] = [],
    ): Promise<StoredFiguresRead> {
      return c.guard(async () => {
        await c.requireRun(c.pool, runId);
        return readFigures(c.lastFigures, c.pool, runId, reducer, keys);
      });
    },
  };
}

/** The reads a page at a time: the snapshot's, and the attempts' (whole, as heads, as facts). */
function pagedReads(
  c: PostgresContext,
): Pick<
  ReadModel,
  | "rerunPages"
  | "rerunFacts"
  | "sampleFingerprintPages"
  | "samplePages"
  | "sampleIdMark"
  | "samplePlace"
  | "attemptHeadPages"
  | "attemptFactPages"
  | "attemptPages"
> {
  // Where the attempts' pages stop: the run's last commit when the read began; the planner's
  // statistics of the attempts refreshed first if they would plan each page as a sort.
  const lastCommit = (runId: string) =>
    c.guard(async () => {
      await c.plannerStats.check(c.pool, "attempts", runId);
      return (await postgresReadModel.listAttemptsAfter(c.pool, runId, undefined, 0)).cursor;
    });
  // A keyset page of the snapshot, the samples' statistics checked before the first.
  const snapshotPage = <Row extends QueryResultRow>(statement: Statement, runId: string) => {
    let first = true;
    return (after: string, limit: number) =>
      c.guard(async () => {
        if (first) await c.plannerStats.check(c.pool, "samples", runId);
        first = false;
        return statement.rows<Row>(c.pool, { runId, after, limit });
      });
  };
  return {
    rerunPages(runId: string, pageSize = 1_000, options: RerunPagesOptions = {}) {
      const { asked } = options;
      const page = asked ? sql.askedRerunPage : options.open ? sql.openRerunPage : sql.rerunPage;
      const flags = asked ? askedFlags(asked) : {};
      // Asked keys are read in the figures' order, requests in their own: statistics first.
      const table = asked ? "sample_figures" : "rerun_requests";
      let first = true;
      return readRerunPages(pageSize, (afterId, afterEpoch, limit) =>
        c.guard(async () => {
          if (first) await c.plannerStats.check(c.pool, table, runId);
          first = false;
          return page.rows<RerunRow>(c.pool, { runId, afterId, afterEpoch, limit, ...flags });
        }),
      );
    },
    async rerunFacts(runId: string) {
      return c.guard(() => readRerunFacts(c.pool, runId));
    },
    sampleFingerprintPages(runId: string, pageSize = 1_000, start?: RunPart) {
      return snapshotPages(
        pageSize,
        snapshotPage<FingerprintRow>(sql.fingerprintPage, runId),
        toFingerprint,
        undefined,
        start,
      );
    },
    samplePages(runId: string, pageSize = 1_000, start?: RunPart) {
      return snapshotPages(
        pageSize,
        snapshotPage<SamplePageRow>(sql.samplePage, runId),
        sampleMapper(runId),
        undefined,
        start,
      );
    },
    async samplePlace(runId: string, id: string) {
      return c.guard(async () => {
        type Row = { place: string; previous: string | null };
        const [row] = await sql.samplePlace.rows<Row>(c.pool, { runId, id });
        return row && { index: Number(row.place), afterSampleId: row.previous ?? "" };
      });
    },
    async sampleIdMark(runId: string, after: string, count: number) {
      return c.guard(async () => {
        const skip = count - 1;
        const rows = await sql.sampleIdMark.rows<{ sample_id: string }>(c.pool, {
          runId,
          after,
          skip,
        });
        return rows[0]?.sample_id;
      });
    },
    attemptHeadPages(runId: string, pageSize = 1_000): AsyncIterable<AttemptHead[]> {
      return headPages(
        runId,
        pageSize,
        () => lastCommit(runId),
        (after, limit, upTo) =>
          c.guard(() =>
            sql.attemptHeadPage.tuples<AttemptHeadRow>(c.pool, { runId, ...after, limit, upTo }),
          ),
      );
    },
    attemptFactPages(runId: string, pageSize = 1_000): AsyncIterable<AttemptFact[]> {
      return factPages(
        runId,
        pageSize,
        () => lastCommit(runId),
        (after, limit, upTo) =>
          c.guard(() =>
            sql.attemptFactPage.tuples<AttemptFactRow>(c.pool, { runId, ...after, limit, upTo }),
          ),
      );
    },
    attemptPages(runId: string, pageSize = 1_000, start?: RunPart): AsyncIterable<Attempt[]> {
      return attemptPages(
        runId,
        pageSize,
        () => lastCommit(runId),
        (after, limit, upTo) =>
          c.guard(() => {
            const last = start?.lastSampleId;
            return last === undefined
              ? sql.attemptPage.tuples<AttemptRow>(c.pool, { runId, ...after, limit, upTo })
              : sql.attemptPartPage.tuples<AttemptRow>(c.pool, {
                  runId,
                  ...after,
                  limit,
                  upTo,
                  last,
                });
          }),
        start,
      );
    },
  };
}

/** The reads of some samples' attempt heads: a resume's (its open samples), an import's. */
function sampleHeadReads(
  c: PostgresContext,
): Pick<ReadModel, "openSampleHeads" | "sampleHeads" | "sampleRecordsOf"> {
  const headsOf = async (runId: string, sampleIds: readonly string[]) => {
    const head = attemptMapper(runId).head;
    const heads: AttemptHead[] = [];
    for (const ids of idPages(sampleIds)) {
      for (const row of await sql.sampleHeads.tuples<AttemptHeadRow>(c.pool, { runId, ids }))
        heads.push(head(row));
    }
    return heads;
  };
  return {
    async openSampleHeads(runId: string, epochs: number) {
      return c.guard(async () => {
        const rows = await sql.openSamples.rows<{ sample_id: string }>(c.pool, { runId, epochs });
        const sampleIds = rows.map((row) => row.sample_id);
        return { sampleIds, heads: await headsOf(runId, sampleIds) };
      });
    },
    async sampleHeads(runId: string, sampleIds: Iterable<string>) {
      return c.guard(async () => {
        const fingerprints: { sampleId: string; fingerprint: string }[] = [];
        for (const ids of idPages(distinctIds(sampleIds))) {
          const rows = await sql.fingerprintsOf.rows<FingerprintRow>(c.pool, { runId, ids });
          fingerprints.push(...rows.map(toFingerprint));
        }
        const known = fingerprints.map((f) => f.sampleId);
        return { fingerprints, heads: await headsOf(runId, known) };
      });
    },
    async sampleRecordsOf(runId: string, sampleIds: Iterable<string>) {
      const record = sampleMapper(runId);
      return c.guard(async () => {
        const records: SampleRecord[] = [];
        for (const ids of idPages(distinctIds(sampleIds))) {
          const rows = await sql.recordsOf.rows<SamplePageRow>(c.pool, { runId, ids });
          records.push(...rows.map(record));
        }
        return records;
      });
    },
  };
}
