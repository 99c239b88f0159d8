import type { Attempt, Key, Reducer, SampleRecord, Scoring } from "../../core/types.js";
import type { StoredFiguresRead } from "../figures-rows.js";
import { groupReportInputs } from "../report-inputs.js";
import { attemptMapper, toSampleRecord } from "../rows.js";
import { attemptPages, factPages, headPages } from "../attempt-pages.js";
import {
  distinctIds,
  idPages,
  sampleMapper,
  snapshotPages,
  toFingerprintFromRaw,
} from "../sample-pages.js";
import { labelsColumn, toRun } from "../run-rows.js";
import { askedFlags, readRerunPages, type RerunPagesOptions } from "../rerun-rows.js";
import { scoringFilterParams, toScoring } from "../scoring-rows.js";
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
import type { SqliteContext } from "./context.js";
import { readFigures, readRerunFacts } from "./figures.js";

/** Every read of the SQLite store (`ReadModel`): listings, attempts, outcomes, spend. */
export function sqliteReads(c: SqliteContext): ReadModel {
  return {
    async listRuns(filter: RunFilter = {}): Promise<RunListing[]> {
      return c.guard(() => {
        const rows = c.s.listRuns.all({
          status: filter.status ?? null,
          evalName: filter.evalName ?? null,
          labels: labelsColumn(filter.labels),
          limit: filter.limit ?? -1,
          offset: filter.offset ?? 0,
        });
        const nowMs = c.now();
        return rows.map((row) => {
          const run = toRun(row, nowMs);
          return { run, counts: c.counts(run) };
        });
      });
    },
    async countKeys(runId: string): Promise<RunCounts> {
      return c.guard(() => c.counts(c.requireRun(runId)));
    },
    ...pagedReads(c),
    ...sampleHeadReads(c),
    async getSamples(runId: string): Promise<SampleRecord[]> {
      return c.guard(() => {
        c.requireRun(runId);
        return c.s.getSamples.all(runId).map((row) => toSampleRecord(row, runId));
      });
    },
    async listSampleFingerprints(
      runId: string,
    ): Promise<{ sampleId: string; fingerprint: string }[]> {
      return c.guard(() => {
        c.requireRun(runId);
        return c.s.listSampleFingerprints
          .all(runId)
          .map((row) => ({ sampleId: row.sample_id, fingerprint: row.fingerprint }));
      });
    },
    async listScorings(runId: string, filter: ScoringFilter = {}): Promise<Scoring[]> {
      return c.guard(() =>
        c.s.listScorings
          .all(scoringFilterParams(runId, filter))
          .map((row) => toScoring(runId, row)),
      );
    },
    async listAttempts(runId: string, filter: AttemptFilter = {}): Promise<Attempt[]> {
      return c.guard(() =>
        (filter.asCommitted ? c.s.listAttemptsAsCommitted : c.s.listAttempts)
          .all({ runId, sampleId: filter.sampleId ?? null, epoch: filter.epoch ?? null })
          .map(attemptMapper(runId).full),
      );
    },
    async listAttemptHeads(runId: string): Promise<AttemptHead[]> {
      return c.guard(() => {
        // Row by row: `.all()` would hold every raw row and every mapped head at once (twice the
        // memory of a 100,000-attempt listing).
        const head = attemptMapper(runId).head;
        const heads: AttemptHead[] = [];
        for (const row of c.s.listAttemptHeads.iterate(runId)) heads.push(head(row));
        return heads;
      });
    },
    async listOutcomes(runId: string, filter: OutcomeFilter = {}): Promise<OutcomePage> {
      return c.guard(() => {
        const run = c.requireRun(runId);
        return c.read.listOutcomes(runId, run.config.epochs, filter);
      });
    },
    async listAttemptsAfter(
      runId: string,
      options: { after?: number; limit?: number } = {},
    ): Promise<AttemptFeed> {
      return c.guard(() => c.read.listAttemptsAfter(runId, options.after, options.limit ?? 1_000));
    },
    async readSpend(runId: string, after?: SpendCursor): Promise<StoredSpend> {
      return c.guard(() => c.read.readSpend(runId, after));
    },
    async listReportInputs(runIds: readonly string[]): Promise<Map<string, ReportInputs>> {
      return c.guard(() => {
        const ids = JSON.stringify(runIds);
        return groupReportInputs(
          runIds,
          c.s.reportFingerprints.iterate(ids),
          c.s.reportHeads.iterate(ids),
          c.s.reportScoringUsage.iterate(ids),
        );
      });
    },
    async listBenchmarks(): Promise<BenchmarkSummary[]> {
      return c.guard(() => c.read.listBenchmarks());
    },
    async readFigures(
      runId: string,
      reducer: Reducer,
      keys: readonly Key[] = [],
    ): Promise<StoredFiguresRead> {
      return c.guard(() => {
        c.requireRun(runId);
        return readFigures(c, runId, reducer, keys);
      });
    },
  };
}

/** The reads a page at a time: the snapshot's, and the attempts' (whole, as heads, as facts). */
function pagedReads(
  c: SqliteContext,
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
  // Where the attempts' pages stop: the run's last commit when the read began.
  const lastCommit = async (runId: string) =>
    c.guard(() => c.read.listAttemptsAfter(runId, undefined, 0).cursor);
  return {
    rerunPages(runId: string, pageSize = 1_000, options: RerunPagesOptions = {}) {
      const { asked } = options;
      const page = asked ? c.s.askedRerunPage : options.open ? c.s.openRerunPage : c.s.rerunPage;
      const flags = asked ? askedFlags(asked) : {};
      return readRerunPages(pageSize, async (afterId, afterEpoch, limit) =>
        c.guard(() => page.all({ runId, afterId, afterEpoch, limit, ...flags })),
      );
    },
    async rerunFacts(runId: string) {
      return c.guard(() => readRerunFacts(c, runId));
    },
    sampleFingerprintPages(runId: string, pageSize = 1_000, start?: RunPart) {
      return snapshotPages(
        pageSize,
        async (after, limit) => c.guard(() => c.s.fingerprintPage.all({ runId, after, limit })),
        toFingerprintFromRaw,
        ([sampleId]) => sampleId,
        start,
      );
    },
    samplePages(runId: string, pageSize = 1_000, start?: RunPart) {
      return snapshotPages(
        pageSize,
        async (after, limit) => c.guard(() => c.s.samplePage.all({ runId, after, limit })),
        sampleMapper(runId),
        undefined,
        start,
      );
    },
    async samplePlace(runId: string, id: string) {
      return c.guard(() => {
        const row = c.s.samplePlace.get({ runId, id });
        return row && { index: row.place, afterSampleId: row.previous ?? "" };
      });
    },
    async sampleIdMark(runId: string, after: string, count: number) {
      return c.guard(() => c.s.sampleIdMark.get({ runId, after, skip: count - 1 })?.[0]);
    },
    // Pages of 1,000: a larger page outlives young-generation GCs while it is folded and is
    // promoted as a whole; at 5,000 a 100,000-attempt report added ~50 MB of old-generation garbage.
    attemptHeadPages(runId: string, pageSize = 1_000): AsyncIterable<AttemptHead[]> {
      return headPages(
        runId,
        pageSize,
        () => lastCommit(runId),
        async (after, limit, upTo) =>
          c.guard(() => c.s.attemptHeadPage.all({ runId, ...after, limit, upTo })),
      );
    },
    attemptFactPages(runId: string, pageSize = 1_000): AsyncIterable<AttemptFact[]> {
      return factPages(
        runId,
        pageSize,
        () => lastCommit(runId),
        async (after, limit, upTo) =>
          c.guard(() => c.s.attemptFactPage.all({ runId, ...after, limit, upTo })),
      );
    },
    attemptPages(runId: string, pageSize = 1_000, start?: RunPart): AsyncIterable<Attempt[]> {
      return attemptPages(
        runId,
        pageSize,
        () => lastCommit(runId),
        async (after, limit, upTo) =>
          c.guard(() => {
            const last = start?.lastSampleId;
            return last === undefined
              ? c.s.attemptPage.all({ runId, ...after, limit, upTo })
              : c.s.attemptPartPage.all({ runId, ...after, limit, upTo, last });
          }),
        start,
      );
    },
  };
}

/** The reads of some samples' attempt heads: a resume's (its open samples), an import's. */
function sampleHeadReads(
  c: SqliteContext,
): Pick<ReadModel, "openSampleHeads" | "sampleHeads" | "sampleRecordsOf"> {
  // In one synchronous block each: no commit lands between the pages.
  const headsOf = (runId: string, sampleIds: readonly string[]) => {
    const head = attemptMapper(runId).head;
    const heads: AttemptHead[] = [];
    for (const ids of idPages(sampleIds)) {
      for (const row of c.s.sampleHeads.iterate({ runId, ids: JSON.stringify(ids) }))
        heads.push(head(row));
    }
    return heads;
  };
  return {
    async openSampleHeads(runId: string, epochs: number) {
      return c.guard(() => {
        const sampleIds = c.s.openSamples.all({ runId, epochs }).map((row) => row.sample_id);
        return { sampleIds, heads: headsOf(runId, sampleIds) };
      });
    },
    async sampleHeads(runId: string, sampleIds: Iterable<string>) {
      return c.guard(() => {
        const fingerprints = idPages(distinctIds(sampleIds)).flatMap((ids) =>
          c.s.fingerprintsOf.all({ runId, ids: JSON.stringify(ids) }).map(toFingerprintFromRaw),
        );
        const known = fingerprints.map((f) => f.sampleId);
        return { fingerprints, heads: headsOf(runId, known) };
      });
    },
    async sampleRecordsOf(runId: string, sampleIds: Iterable<string>) {
      const record = sampleMapper(runId);
      return c.guard(() =>
        idPages(distinctIds(sampleIds)).flatMap((ids) =>
          c.s.recordsOf.all({ runId, ids: JSON.stringify(ids) }).map(record),
        ),
      );
    },
  };
}
