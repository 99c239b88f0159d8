import { dirname } from "node:path";
import { StetError, isStetError } from "../core/errors.js";
import type {
  Attempt,
  AttemptDraft,
  Key,
  OwnerIdentity,
  Run,
  RunConfig,
  RunStatus,
  SampleRecord,
  Scoring,
  ScoringDraft,
} from "../core/types.js";
import {
  alreadyScored,
  checkDrafts,
  checkNewRun,
  checkRunConfig,
  checkUniqueSampleIds,
  fenced,
  illegalRelease,
  invalidInput,
  notInSnapshot,
  runNotFound,
} from "./checks.js";
import {
  checkScoringDrafts,
  hasOutput,
  scoringParams,
  storedScoring,
  toScoring,
  unscorable,
} from "./scoring-rows.js";
import {
  JOURNAL_SQL,
  checkStepDrafts,
  listParams,
  stepParams,
  toJournalEntry,
  type JournalRow,
} from "./journal-rows.js";
import { corruptStore, isCorruption } from "./sqlite-file.js";
import { busyMessage, isBusy } from "./sqlite-lock-holder.js";
import { openSqliteDatabase } from "./sqlite-open.js";
import { immediate, type SqliteDatabase } from "./sqlite-driver.js";
import { prepareLeases } from "./sqlite-leases.js";
import {
  attemptMapper,
  attemptParams,
  countsOf,
  headPages,
  messageOf,
  ownerParams,
  storedAttempt,
  toRun,
  toSampleRecord,
  type RunRow,
} from "./rows.js";
import { prepareReadModel } from "./sqlite-read-model.js";
import { groupReportInputs } from "./report-inputs.js";
import { prepareStatements, type Statements } from "./sqlite-statements.js";
import type {
  AttemptBatchExtras,
  AttemptFeed,
  AttemptFilter,
  AttemptHead,
  BenchmarkSummary,
  HeartbeatReply,
  LeaseClaim,
  WorkerIdentity,
  WorkerRecord,
  WorkerState,
  JournalEntry,
  JournalFilter,
  NewRun,
  OutcomeFilter,
  OutcomePage,
  RunCounts,
  RunFilter,
  RunListing,
  StepDiscard,
  StepDraft,
  ReportInputs,
  RunNote,
  SpendCursor,
  StoredSpend,
  Store,
} from "./types.js";

export interface SqliteStoreOptions {
  /** How long a write waits for another process's lock before failing (E_STORE). Default 10 s. */
  busyTimeoutMs?: number;
  /** The store's clock, in ms since the epoch: heartbeats and their ages use it. */
  now?: () => number;
  /** False for commands that only read: a missing, empty or foreign file is refused, not made a store. */
  create?: boolean;
}

/**
 * Opens (creating it and its directory if missing) a SQLite store file and migrates it.
 * Several processes may open the same file: writes serialize on SQLite's lock.
 *
 * @example const store = openSqliteStore(".stet/stet.db");
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const db = openSqliteDatabase(path, {
    busyTimeoutMs: options.busyTimeoutMs ?? 10_000,
    ...(options.create === undefined ? {} : { create: options.create }),
  });
  return createSqliteStore(db, { location: path, fallbackDir: dirname(path), now: options.now });
}

/**
 * A Store over an open, migrated SQLite database (see openSqliteStore for the usual entry).
 *
 * `updatedAt` changes when the run's state changes (create, claim, release, interrupt, snapshot
 * update), not on heartbeats: the owner's `heartbeatAt` says when it was last alive.
 *
 * @example createSqliteStore(db, { location: "test.db", fallbackDir: "." })
 */
export function createSqliteStore(
  db: SqliteDatabase,
  options: { location: string; fallbackDir: string; now?: (() => number) | undefined },
): Store {
  return new SqliteStore(db, options.location, options.fallbackDir, options.now ?? Date.now);
}

class SqliteStore implements Store {
  private readonly s: Statements;
  private readModel: ReturnType<typeof prepareReadModel> | undefined;
  private journalStatements: ReturnType<typeof prepareJournal> | undefined;
  private leaseStatements: ReturnType<typeof prepareLeases> | undefined;

  constructor(
    private readonly db: SqliteDatabase,
    readonly location: string,
    readonly fallbackDir: string,
    private readonly now: () => number,
  ) {
    this.s = prepareStatements(db);
  }

  /** The browsing queries (outcome pages, feeds, benchmarks), prepared on first use: a run needs none. */
  private get read(): ReturnType<typeof prepareReadModel> {
    return (this.readModel ??= prepareReadModel(this.db));
  }

  /** The lease statements, prepared on first use: only distributed runs need them. */
  private get leases(): ReturnType<typeof prepareLeases> {
    return (this.leaseStatements ??= prepareLeases(this.db, this.now));
  }

  private get journal(): ReturnType<typeof prepareJournal> {
    return (this.journalStatements ??= prepareJournal(this.db));
  }

  async createRun(input: NewRun): Promise<Run> {
    const { id, config, samples, owner } = input;
    return this.guard(() => {
      checkNewRun(input);
      const nowMs = this.now();
      immediate(this.db, () => {
        if (this.s.getRun.get(id)) throw invalidInput(`a run with id "${id}" already exists`);
        this.s.insertRun.run({
          id,
          evalName: config.evalName,
          config: JSON.stringify(config),
          sampleCount: samples.length,
          now: new Date(nowMs).toISOString(),
          nowMs,
          ...ownerParams(owner),
        });
        for (const { sample, fingerprint } of samples) {
          this.s.insertSample.run(id, sample.id, fingerprint, JSON.stringify(sample));
        }
        if (config.distributed) this.leases.create(id, config.epochs);
      });
      return this.requireRun(id);
    });
  }

  async getRun(runId: string): Promise<Run | undefined> {
    return this.guard(() => this.readRun(runId));
  }

  async listRuns(filter: RunFilter = {}): Promise<RunListing[]> {
    return this.guard(() => {
      const rows = this.s.listRuns.all({
        status: filter.status ?? null,
        evalName: filter.evalName ?? null,
        limit: filter.limit ?? -1,
        offset: filter.offset ?? 0,
      });
      const nowMs = this.now();
      return rows.map((row) => {
        const run = toRun(row, nowMs);
        return { run, counts: this.counts(run) };
      });
    });
  }

  async countKeys(runId: string): Promise<RunCounts> {
    return this.guard(() => this.counts(this.requireRun(runId)));
  }

  async getSamples(runId: string): Promise<SampleRecord[]> {
    return this.guard(() => {
      this.requireRun(runId);
      return this.s.getSamples.all(runId).map((row) => toSampleRecord(row, runId));
    });
  }

  async listSampleFingerprints(
    runId: string,
  ): Promise<{ sampleId: string; fingerprint: string }[]> {
    return this.guard(() => {
      this.requireRun(runId);
      return this.s.listSampleFingerprints
        .all(runId)
        .map((row) => ({ sampleId: row.sample_id, fingerprint: row.fingerprint }));
    });
  }

  async updateSamples(runId: string, token: string, records: SampleRecord[]): Promise<void> {
    return this.guard(() => {
      checkUniqueSampleIds(records);
      immediate(this.db, () => {
        this.fence(runId, token);
        for (const { sample, fingerprint } of records) {
          const { changes } = this.s.updateSample.run(
            fingerprint,
            JSON.stringify(sample),
            runId,
            sample.id,
          );
          if (changes === 0) throw notInSnapshot(runId, sample.id);
        }
        this.s.touchRun.run(new Date(this.now()).toISOString(), runId);
      });
    });
  }

  async claimRun(
    runId: string,
    owner: OwnerIdentity,
    expectedToken: string | null,
  ): Promise<boolean> {
    return this.guard(() => {
      const nowMs = this.now();
      const { changes } = this.s.claimRun.run({
        runId,
        expectedToken,
        nowMs,
        now: new Date(nowMs).toISOString(),
        ...ownerParams(owner),
      });
      return changes === 1;
    });
  }

  async heartbeat(runId: string, token: string): Promise<HeartbeatReply> {
    return this.guard(() => {
      const row = this.s.heartbeat.get({ runId, token, nowMs: this.now() });
      if (row) return { owned: true, cancelRequested: row.cancel_requested };
      return immediate(this.db, () => this.leases.heartbeat(runId, token)) ?? { owned: false };
    });
  }

  async requestCancel(runId: string, token: string, note: string): Promise<boolean> {
    return this.guard(() => this.s.requestCancel.run({ runId, token, note }).changes === 1);
  }

  async updateRunConfig(runId: string, token: string, config: RunConfig): Promise<boolean> {
    checkRunConfig(config);
    return this.guard(() => {
      const now = new Date(this.now()).toISOString();
      const text = JSON.stringify(config);
      return this.s.updateRunConfig.run({ runId, token, config: text, now }).changes === 1;
    });
  }

  async releaseRun(
    runId: string,
    token: string,
    status: RunStatus,
    note?: string,
  ): Promise<boolean> {
    return this.guard(() => {
      if (status === "running") throw illegalRelease(runId);
      const now = new Date(this.now()).toISOString();
      return this.s.releaseRun.run({ runId, token, status, note: note ?? null, now }).changes === 1;
    });
  }

  async interruptOrphan(runId: string, expectedToken: string, note: string): Promise<boolean> {
    return this.guard(() => {
      const now = new Date(this.now()).toISOString();
      return this.s.interruptOrphan.run({ runId, token: expectedToken, note, now }).changes === 1;
    });
  }

  async markInflight(runId: string, token: string, keys: Key[]): Promise<void> {
    return this.guard(() =>
      immediate(this.db, () => {
        this.fence(runId, token, keys);
        for (const key of keys) {
          this.requireSample(runId, key.sampleId);
          this.s.markInflight.run(runId, key.sampleId, key.epoch);
        }
      }),
    );
  }

  async listInflight(runId: string): Promise<Key[]> {
    return this.guard(() =>
      this.s.listInflight.all(runId).map((row) => ({ sampleId: row.sample_id, epoch: row.epoch })),
    );
  }

  async recordAttempts(
    runId: string,
    token: string,
    drafts: AttemptDraft[],
    extras: AttemptBatchExtras = {},
  ): Promise<Attempt[]> {
    const { inflight = [], steps } = extras;
    return this.guard(() => {
      checkDrafts(drafts);
      if (steps) checkStepDrafts(steps.drafts);
      return immediate(this.db, () => {
        const stepKeys = steps ? [...steps.drafts, ...steps.discard] : [];
        const fence = this.fence(runId, token, [...drafts, ...inflight, ...stepKeys]);
        if (steps) this.writeSteps(runId, steps.drafts, steps.discard);
        for (const key of inflight) {
          this.requireSample(runId, key.sampleId);
          this.s.markInflight.run(runId, key.sampleId, key.epoch);
        }
        const stored = drafts.map((draft) => this.insertAttempt(runId, draft));
        // A worker's scored key has its outcome: its lease ends with the commit that gave it.
        if (fence === "worker") {
          this.leases.finish(
            runId,
            token,
            stored.filter((a) => a.status === "scored"),
          );
        }
        return stored;
      });
    });
  }

  async recordScorings(runId: string, token: string, drafts: ScoringDraft[]): Promise<Scoring[]> {
    return this.guard(() => {
      checkScoringDrafts(drafts);
      return immediate(this.db, () => {
        this.fence(runId, token, drafts);
        return drafts.map((draft) => {
          const { sampleId, epoch, attempt } = draft;
          const target = this.s.scorableAttempt.get({ runId, sampleId, epoch, attempt });
          if (!target) throw unscorable(runId, draft, "is not stored");
          if (!hasOutput(target)) throw unscorable(runId, draft, "has no output to score");
          this.s.insertScoring.run(scoringParams(runId, target.next, draft));
          return storedScoring(runId, target.next, draft);
        });
      });
    });
  }

  async recordSteps(
    runId: string,
    token: string,
    drafts: StepDraft[],
    discard: readonly StepDiscard[] = [],
  ): Promise<void> {
    return this.guard(() => {
      checkStepDrafts(drafts);
      immediate(this.db, () => {
        this.fence(runId, token, [...drafts, ...discard]);
        this.writeSteps(runId, drafts, discard);
      });
    });
  }

  /** Journal entries and discards, inside the caller's transaction (see recordSteps). */
  private writeSteps(runId: string, drafts: StepDraft[], discard: readonly StepDiscard[]): void {
    const j = this.journal;
    for (const d of discard) {
      j.truncateOpen.run({ runId, sampleId: d.sampleId, epoch: d.epoch, step: d.fromStep });
    }
    for (const draft of drafts) {
      const params = stepParams(runId, draft);
      const key = { runId, sampleId: draft.sampleId, epoch: draft.epoch, step: draft.step };
      (draft.truncate ? j.truncateOpen : j.replaceOpen).run(key);
      j.insert.run(params);
    }
  }

  async listJournal(runId: string, filter: JournalFilter = {}): Promise<JournalEntry[]> {
    return this.guard(() =>
      this.journal.list.all(listParams(runId, filter)).map((row) => toJournalEntry(runId, row)),
    );
  }

  async listJournalKeys(runId: string): Promise<Key[]> {
    return this.guard(() =>
      this.journal.openKeys.all({ runId }).map((r) => ({ sampleId: r.sample_id, epoch: r.epoch })),
    );
  }

  async pruneJournal(runId: string, keep: "open" | "failed" = "open"): Promise<number> {
    const statement = keep === "failed" ? this.journal.pruneScored : this.journal.prune;
    return this.guard(() => statement.run({ runId }).changes);
  }

  async listScorings(runId: string, filter: AttemptFilter = {}): Promise<Scoring[]> {
    return this.guard(() =>
      this.s.listScorings
        .all({ runId, sampleId: filter.sampleId ?? null, epoch: filter.epoch ?? null })
        .map((row) => toScoring(runId, row)),
    );
  }

  async listAttempts(runId: string, filter: AttemptFilter = {}): Promise<Attempt[]> {
    return this.guard(() =>
      (filter.asCommitted ? this.s.listAttemptsAsCommitted : this.s.listAttempts)
        .all({ runId, sampleId: filter.sampleId ?? null, epoch: filter.epoch ?? null })
        .map(attemptMapper(runId).full),
    );
  }

  async listAttemptHeads(runId: string): Promise<AttemptHead[]> {
    return this.guard(() => {
      // Row by row: `.all()` would hold every raw row and every mapped head at once (twice the
      // memory of a 100,000-attempt listing).
      const head = attemptMapper(runId).head;
      const heads: AttemptHead[] = [];
      for (const row of this.s.listAttemptHeads.iterate(runId)) heads.push(head(row));
      return heads;
    });
  }

  // Pages of 1,000: a larger page outlives young-generation GCs while it is folded and is
  // promoted as a whole; at 5,000 a 100,000-attempt report added ~50 MB of old-generation garbage.
  attemptHeadPages(runId: string, pageSize = 1_000): AsyncIterable<AttemptHead[]> {
    return headPages(runId, pageSize, async (after, limit) =>
      this.guard(() => this.s.attemptHeadPage.all({ runId, ...after, limit })),
    );
  }

  async listOutcomes(runId: string, filter: OutcomeFilter = {}): Promise<OutcomePage> {
    return this.guard(() => {
      const run = this.requireRun(runId);
      return this.read.listOutcomes(runId, run.config.epochs, filter);
    });
  }

  async listAttemptsAfter(
    runId: string,
    options: { after?: number; limit?: number } = {},
  ): Promise<AttemptFeed> {
    return this.guard(() =>
      this.read.listAttemptsAfter(runId, options.after, options.limit ?? 1_000),
    );
  }

  async readSpend(runId: string, after?: SpendCursor): Promise<StoredSpend> {
    return this.guard(() => this.read.readSpend(runId, after));
  }

  async listReportInputs(runIds: readonly string[]): Promise<Map<string, ReportInputs>> {
    return this.guard(() => {
      const ids = JSON.stringify(runIds);
      return groupReportInputs(
        runIds,
        this.s.reportFingerprints.iterate(ids),
        this.s.reportHeads.iterate(ids),
        this.s.reportScoringUsage.iterate(ids),
      );
    });
  }

  async listBenchmarks(): Promise<BenchmarkSummary[]> {
    return this.guard(() => this.read.listBenchmarks());
  }

  async registerWorker(runId: string, worker: WorkerIdentity): Promise<void> {
    return this.guard(() => {
      const run = this.requireRun(runId);
      if (!run.config.distributed) throw invalidInput(`run ${runId} is not a distributed run`);
      this.leases.register(runId, worker);
    });
  }

  async claimLeases(runId: string, token: string, limit: number): Promise<LeaseClaim> {
    return this.guard(() => immediate(this.db, () => this.leases.claim(runId, token, limit)));
  }

  async settleLeases(runId: string, token: string, keys: readonly Key[]): Promise<void> {
    return this.guard(() =>
      immediate(this.db, () => {
        this.fence(runId, token, keys);
        this.leases.finish(runId, token, keys);
      }),
    );
  }

  async leaveRun(
    runId: string,
    token: string,
    state: Exclude<WorkerState, "active">,
  ): Promise<void> {
    return this.guard(() => immediate(this.db, () => this.leases.leave(runId, token, state)));
  }

  async expireWorker(runId: string, token: string): Promise<number> {
    return this.guard(() => immediate(this.db, () => this.leases.expire(runId, token)));
  }

  async listWorkers(runId: string): Promise<WorkerRecord[]> {
    return this.guard(() => this.leases.list(runId));
  }

  async reopenDistributed(runId: string): Promise<boolean> {
    return this.guard(() => immediate(this.db, () => this.leases.reopen(runId)));
  }

  async requestWorkersCancel(runId: string, note: string): Promise<boolean> {
    return this.guard(() => this.leases.cancel(runId, note));
  }

  async closeDistributed(runId: string, status: RunStatus, note?: RunNote): Promise<boolean> {
    return this.guard(() => {
      if (status === "running") throw illegalRelease(runId);
      if (typeof note !== "function") return this.leases.close(runId, status, note ?? null);
      // The spend is read under the write lock the close takes: no commit comes between them.
      return immediate(this.db, () => {
        const spent = this.read.readSpend(runId, undefined);
        return this.leases.close(runId, status, note(spent));
      });
    });
  }

  async close(): Promise<void> {
    this.db.close();
  }

  /** Runs inside the caller's IMMEDIATE transaction, so the checks hold until commit. */
  private insertAttempt(runId: string, draft: AttemptDraft): Attempt {
    const { sampleId, epoch, fingerprint } = draft;
    const after = draft.rerunAfter ?? 0;
    const state = this.s.keyState.get({ runId, sampleId, epoch, fingerprint, after });
    if (!state?.inSnapshot) throw notInSnapshot(runId, sampleId);
    if (state.scored) throw alreadyScored(runId, sampleId, epoch);
    this.s.insertAttempt.run(attemptParams(runId, state.next, draft));
    this.s.clearInflight.run(runId, sampleId, epoch);
    this.journal.bind.run({ runId, sampleId, epoch, attempt: state.next });
    return storedAttempt(runId, state.next, draft);
  }

  /** Must run inside an IMMEDIATE transaction: the token read then holds until commit. */
  private fence(runId: string, token: string, keys?: readonly Key[]): "owner" | "worker" {
    const row = this.s.ownerToken.get(runId);
    if (!row) throw runNotFound(runId);
    if (row.owner_token === token) return "owner";
    // A worker's token: a live lease on each key written (see the port).
    if (keys && this.leases.fence(runId, token, keys)) return "worker";
    throw fenced(runId);
  }

  private requireSample(runId: string, sampleId: string): void {
    if (!this.s.sampleFingerprint.get(runId, sampleId)) throw notInSnapshot(runId, sampleId);
  }

  private readRun(runId: string): Run | undefined {
    const row: RunRow | undefined = this.s.getRun.get(runId);
    return row && toRun(row, this.now());
  }

  private requireRun(runId: string): Run {
    const run = this.readRun(runId);
    if (!run) throw runNotFound(runId);
    return run;
  }

  private counts(run: Run): RunCounts {
    return countsOf(run, this.s.countKeys.get({ runId: run.id, epochs: run.config.epochs }));
  }

  /** Why a statement gave up waiting for the write lock (see `busyMessage`). */
  private busy(): string {
    const timeoutMs = Number(this.db.pragma("busy_timeout", { simple: true }));
    return busyMessage(this.location, timeoutMs);
  }

  /** Driver failures (busy, disk full, closed) become E_STORE, which the engine may retry. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (cause) {
      if (isStetError(cause)) {
        // A worker's write refused by its lease is counted on it (after the rollback).
        const worker = cause.code === "E_FENCED" ? cause.details?.worker : undefined;
        if (typeof worker === "string") this.leases.countRejected(worker);
        throw cause;
      }
      if (isCorruption(cause))
        throw corruptStore(this.location, messageOf(cause), { cause, opening: false });
      const why = isBusy(cause) ? this.busy() : messageOf(cause);
      throw new StetError("E_STORE", `store ${this.location}: ${why}`, { cause });
    }
  }
}

/** The journal's statements, prepared on first use. */
function prepareJournal(db: SqliteDatabase) {
  return {
    truncateOpen: db.prepare(JOURNAL_SQL.truncateOpen),
    replaceOpen: db.prepare(JOURNAL_SQL.replaceOpen),
    insert: db.prepare(JOURNAL_SQL.insert),
    bind: db.prepare(JOURNAL_SQL.bind),
    list: db.prepare<JournalRow>(JOURNAL_SQL.list),
    openKeys: db.prepare<{ sample_id: string; epoch: number }>(JOURNAL_SQL.openKeys),
    prune: db.prepare(JOURNAL_SQL.prune),
    pruneScored: db.prepare(JOURNAL_SQL.pruneScored),
  };
}
