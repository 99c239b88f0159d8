import pg from "pg";
import { resolve } from "node:path";
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
  JOURNAL_COLUMNS,
  JOURNAL_SQL,
  checkStepDrafts,
  listParams,
  stepParams,
  toJournalEntry,
  type JournalRow,
} from "./journal-rows.js";
import { migratePostgres } from "./migrate-postgres.js";
import {
  redactPassword,
  statement,
  transaction,
  urlSecrets,
  type Queryable,
} from "./postgres-driver.js";
import type { Secret } from "../core/secrets.js";
import { insertAttempts } from "./postgres-insert-attempts.js";
import { postgresLeases as leases } from "./postgres-leases.js";
import { postgresReadModel } from "./postgres-read-model.js";
import { groupReportInputs, type RunHeadRow, type UsageRow } from "./report-inputs.js";
import {
  checkScoringDrafts,
  hasOutput,
  scoringParams,
  storedScoring,
  toScoring,
  unscorable,
  type ScoringRow,
} from "./scoring-rows.js";
import { postgresStatements as sql } from "./postgres-statements.js";
import { SPEND_START } from "./spend-rows.js";
import {
  attemptMapper,
  countsOf,
  headPages,
  messageOf,
  ownerParams,
  toRun,
  toSampleRecord,
  type AttemptHeadRow,
  type AttemptRow,
  type RunRow,
  type SampleRow,
} from "./rows.js";
import type {
  AttemptFeed,
  AttemptFilter,
  RunNote,
  SpendCursor,
  StoredSpend,
  AttemptHead,
  BenchmarkSummary,
  HeartbeatReply,
  JournalEntry,
  LeaseClaim,
  WorkerIdentity,
  WorkerRecord,
  WorkerState,
  JournalFilter,
  StepDiscard,
  AttemptBatchExtras,
  StepDraft,
  NewRun,
  OutcomeFilter,
  OutcomePage,
  RunCounts,
  RunFilter,
  RunListing,
  ReportInputs,
  Store,
} from "./types.js";

export interface PostgresStoreOptions {
  /** The schema holding stet's tables (created if missing). Default: the connection's `search_path`. */
  schema?: string;
  /** Connections the store may hold at once. Default 4. */
  maxConnections?: number;
  /** Where the engine writes attempts it could not commit. Default `.stet` in the working directory. */
  fallbackDir?: string;
  /** The connections' `application_name`, as pg_stat_activity shows it. Default "stet". */
  applicationName?: string;
  /**
   * False for commands that only read: a database (or schema) without stet's tables is refused
   * with `E_STORE` instead of having them created. Default true.
   */
  create?: boolean;
  /**
   * How long one of the store's sessions may sit idle inside a transaction before the server
   * ends it, rolling it back and releasing its locks: a process frozen (SIGSTOP, a suspended VM)
   * between two statements of a write must not hold the run's row lock past the stale limit, or
   * the takeover would wait on it. Keep it below the stale limit. Default 10 s.
   */
  idleInTransactionTimeoutMs?: number;
  /**
   * How long a statement waits for a lock before it fails (`E_STORE`, naming the wait), so no
   * claim, recovery or write waits forever on a session that holds one. Default: the idle
   * timeout + 5 s, by when a frozen session of stet's has been ended.
   */
  lockTimeoutMs?: number;
}

/** A session idle inside a transaction this long is ended by the server (see the option). */
export const DEFAULT_IDLE_IN_TRANSACTION_MS = 10_000;

type DbRun = RunRow & { db_now_ms: number };

/** SQLSTATE 55P03: a lock wait ran out (lock_timeout). */
const LOCK_NOT_AVAILABLE = "55P03";

/**
 * A store in a PostgreSQL database, shared by every process and machine that connects to it:
 * ownership claims are compare-and-set updates, fencing holds the run's row lock until commit,
 * and heartbeat ages are read on the database server's clock, so hosts with skewed clocks agree
 * on who is stale. Connects, and migrates the schema, on first use; a database that cannot be
 * reached fails that call with `E_STORE` (and a later call tries again).
 *
 * @example const store = openPostgresStore("postgres://stet@db.internal/evals");
 */
export function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Store {
  const { schema } = options;
  // Lower case only: the name is used unquoted in search_path, where PostgreSQL folds case.
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new StetError(
      "E_CONFIG",
      `invalid PostgreSQL schema name "${schema}": use lower-case letters, digits and _`,
    );
  }
  const idleMs = options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_MS;
  const lockMs = options.lockTimeoutMs ?? idleMs + 5_000;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 4,
    application_name: options.applicationName ?? "stet",
    // Session settings sent when each connection starts (a URL parameter of the same name wins).
    idle_in_transaction_session_timeout: idleMs,
    lock_timeout: lockMs,
    ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
  });
  // An idle connection that the server drops emits here; the next query opens a new one.
  pool.on("error", () => {});
  return new PostgresStore(
    pool,
    `${redactPassword(url)}${schema === undefined ? "" : ` (schema ${schema})`}`,
    options.fallbackDir ?? resolve(".stet"),
    { schema, idleMs, lockMs },
    urlSecrets(url),
    options.create ?? true,
  );
}

class PostgresStore implements Store {
  /** Whether a run is distributed, by id, as read by a write (it never changes). */
  private readonly distributed = new Map<string, boolean>();
  private ready: Promise<void> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    readonly location: string,
    readonly fallbackDir: string,
    private readonly session: { schema: string | undefined; idleMs: number; lockMs: number },
    readonly secrets: readonly Secret[],
    private readonly create: boolean,
  ) {}

  async createRun(input: NewRun): Promise<Run> {
    const { id, config, samples, owner } = input;
    checkNewRun(input);
    return this.guard(async () => {
      await transaction(this.pool, async (tx) => {
        const inserted = await sql.insertRun.run(tx, {
          id,
          evalName: config.evalName,
          config: JSON.stringify(config),
          sampleCount: samples.length,
          ...ownerParams(owner),
        });
        if (inserted === 0) throw invalidInput(`a run with id "${id}" already exists`);
        await sql.insertSamples.run(tx, {
          runId: id,
          ids: samples.map((r) => r.sample.id),
          fingerprints: samples.map((r) => r.fingerprint),
          samples: samples.map((r) => JSON.stringify(r.sample)),
        });
        if (config.distributed) await leases.create(tx, id, config.epochs);
      });
      return this.requireRun(this.pool, id);
    });
  }

  async getRun(runId: string): Promise<Run | undefined> {
    return this.guard(() => this.readRun(this.pool, runId));
  }

  async listRuns(filter: RunFilter = {}): Promise<RunListing[]> {
    return this.guard(async () => {
      const rows = await sql.listRuns.rows<DbRun>(this.pool, {
        status: filter.status ?? null,
        evalName: filter.evalName ?? null,
        limit: filter.limit ?? null,
        offset: filter.offset ?? 0,
      });
      return Promise.all(
        rows.map(async (row) => {
          const run = toRun(row, row.db_now_ms);
          return { run, counts: await this.counts(run) };
        }),
      );
    });
  }

  async countKeys(runId: string): Promise<RunCounts> {
    return this.guard(async () => this.counts(await this.requireRun(this.pool, runId)));
  }

  async getSamples(runId: string): Promise<SampleRecord[]> {
    return this.guard(async () => {
      await this.requireRun(this.pool, runId);
      const rows = await sql.getSamples.rows<SampleRow>(this.pool, { runId });
      return rows.map((row) => toSampleRecord(row, runId));
    });
  }

  async listSampleFingerprints(
    runId: string,
  ): Promise<{ sampleId: string; fingerprint: string }[]> {
    return this.guard(async () => {
      await this.requireRun(this.pool, runId);
      const rows = await sql.listSampleFingerprints.rows<{
        sample_id: string;
        fingerprint: string;
      }>(this.pool, { runId });
      return rows.map((row) => ({ sampleId: row.sample_id, fingerprint: row.fingerprint }));
    });
  }

  async updateSamples(runId: string, token: string, records: SampleRecord[]): Promise<void> {
    checkUniqueSampleIds(records);
    return this.guard(() =>
      transaction(this.pool, async (tx) => {
        await this.fence(tx, runId, token);
        for (const { sample, fingerprint } of records) {
          const changed = await sql.updateSample.run(tx, {
            runId,
            sampleId: sample.id,
            fingerprint,
            sample: JSON.stringify(sample),
          });
          if (changed === 0) throw notInSnapshot(runId, sample.id);
        }
        await sql.touchRun.run(tx, { runId });
      }),
    );
  }

  async claimRun(
    runId: string,
    owner: OwnerIdentity,
    expectedToken: string | null,
  ): Promise<boolean> {
    return this.guard(
      async () =>
        (await sql.claimRun.run(this.pool, { runId, expectedToken, ...ownerParams(owner) })) === 1,
    );
  }

  async heartbeat(runId: string, token: string): Promise<HeartbeatReply> {
    return this.guard(async () => {
      const [row] = await sql.heartbeat.rows<{ cancel_requested: string | null }>(this.pool, {
        runId,
        token,
      });
      if (row) return { owned: true, cancelRequested: row.cancel_requested };
      return (await leases.heartbeat(this.pool, runId, token)) ?? { owned: false };
    });
  }

  async requestCancel(runId: string, token: string, note: string): Promise<boolean> {
    return this.guard(
      async () => (await sql.requestCancel.run(this.pool, { runId, token, note })) === 1,
    );
  }

  async updateRunConfig(runId: string, token: string, config: RunConfig): Promise<boolean> {
    checkRunConfig(config);
    const text = JSON.stringify(config);
    return this.guard(
      async () => (await sql.updateRunConfig.run(this.pool, { runId, token, config: text })) === 1,
    );
  }

  async releaseRun(
    runId: string,
    token: string,
    status: RunStatus,
    note?: string,
  ): Promise<boolean> {
    if (status === "running") throw illegalRelease(runId);
    return this.guard(
      async () =>
        (await sql.releaseRun.run(this.pool, { runId, token, status, note: note ?? null })) === 1,
    );
  }

  async interruptOrphan(runId: string, expectedToken: string, note: string): Promise<boolean> {
    return this.guard(
      async () =>
        (await sql.interruptOrphan.run(this.pool, { runId, token: expectedToken, note })) === 1,
    );
  }

  async markInflight(runId: string, token: string, keys: Key[]): Promise<void> {
    return this.guard(() =>
      transaction(this.pool, async (tx) => {
        await this.fence(tx, runId, token, keys);
        await this.mark(tx, runId, keys);
      }),
    );
  }

  async listInflight(runId: string): Promise<Key[]> {
    return this.guard(async () => {
      const rows = await sql.listInflight.rows<{ sample_id: string; epoch: number }>(this.pool, {
        runId,
      });
      return rows.map((row) => ({ sampleId: row.sample_id, epoch: row.epoch }));
    });
  }

  async recordAttempts(
    runId: string,
    token: string,
    drafts: AttemptDraft[],
    extras: AttemptBatchExtras = {},
  ): Promise<Attempt[]> {
    const { inflight = [], steps } = extras;
    checkDrafts(drafts);
    if (steps) checkStepDrafts(steps.drafts);
    const keys = [...drafts, ...inflight, ...(steps ? [...steps.drafts, ...steps.discard] : [])];
    return this.guard(() =>
      transaction(this.pool, async (tx) => {
        if (await this.fenceWorker(tx, runId, token, keys)) {
          if (steps) await this.writeSteps(tx, runId, steps.drafts, steps.discard);
          return this.recordWorkerAttempts(tx, runId, token, drafts, inflight);
        }
        const fence = await this.fence(tx, runId, token, keys);
        if (steps) await this.writeSteps(tx, runId, steps.drafts, steps.discard);
        await this.mark(tx, runId, inflight);
        const stored = await insertAttempts(tx, runId, drafts);
        if (stored.length > 0) await journal.bind.run(tx, bindColumns(runId, stored));
        // A worker's scored key has its outcome: its lease ends with the commit that gave it.
        if (fence === "worker") {
          await leases.finish(
            tx,
            runId,
            token,
            stored.filter((a) => a.status === "scored"),
          );
        }
        return stored;
      }),
    );
  }

  async recordScorings(runId: string, token: string, drafts: ScoringDraft[]): Promise<Scoring[]> {
    checkScoringDrafts(drafts);
    return this.guard(() =>
      transaction(this.pool, async (tx) => {
        await this.fence(tx, runId, token, drafts);
        const stored: Scoring[] = [];
        for (const draft of drafts) {
          const { sampleId, epoch, attempt } = draft;
          const [target] = await sql.scorableAttempt.rows<{
            status: string;
            error: string | null;
            next: number;
          }>(tx, { runId, sampleId, epoch, attempt });
          if (!target) throw unscorable(runId, draft, "is not stored");
          if (!hasOutput(target)) throw unscorable(runId, draft, "has no output to score");
          await sql.insertScoring.run(tx, scoringParams(runId, target.next, draft));
          stored.push(storedScoring(runId, target.next, draft));
        }
        return stored;
      }),
    );
  }

  async recordSteps(
    runId: string,
    token: string,
    drafts: StepDraft[],
    discard: readonly StepDiscard[] = [],
  ): Promise<void> {
    checkStepDrafts(drafts);
    return this.guard(() =>
      transaction(this.pool, async (tx) => {
        await this.fence(tx, runId, token, [...drafts, ...discard]);
        await this.writeSteps(tx, runId, drafts, discard);
      }),
    );
  }

  /** Journal entries and discards, inside the caller's transaction (see recordSteps). */
  private async writeSteps(
    tx: Queryable,
    runId: string,
    drafts: StepDraft[],
    discard: readonly StepDiscard[],
  ): Promise<void> {
    // One statement each for the whole batch: the open entries each draft replaces (or, for a
    // divergence or a discard, every one from its step on), then the new entries.
    const dropped = [
      ...discard.map((d) => ({ ...d, step: d.fromStep, after: true })),
      ...drafts.map((d) => ({ ...d, after: d.truncate === true })),
    ];
    if (dropped.length > 0) {
      await journal.dropOpen.run(tx, {
        runId,
        sampleIds: dropped.map((d) => d.sampleId),
        epochs: dropped.map((d) => d.epoch),
        steps: dropped.map((d) => d.step),
        after: dropped.map((d) => d.after),
      });
    }
    // A later draft at the same step replaces an earlier one, as SQLite's one by one does.
    const last = new Map(drafts.map((d) => [`${d.sampleId}\u0000${d.epoch}\u0000${d.step}`, d]));
    if (last.size > 0) {
      const rows = [...last.values()].map((d) => stepParams(runId, d));
      await journal.insertMany.run(tx, stepColumns(rows));
    }
  }

  async listJournal(runId: string, filter: JournalFilter = {}): Promise<JournalEntry[]> {
    return this.guard(async () => {
      const rows = await journal.list.rows<JournalRow>(this.pool, listParams(runId, filter));
      return rows.map((row) => toJournalEntry(runId, row));
    });
  }

  async listJournalKeys(runId: string): Promise<Key[]> {
    return this.guard(async () => {
      const rows = await journal.openKeys.rows<{ sample_id: string; epoch: number }>(this.pool, {
        runId,
      });
      return rows.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch }));
    });
  }

  async pruneJournal(runId: string, keep: "open" | "failed" = "open"): Promise<number> {
    const statement = keep === "failed" ? journal.pruneScored : journal.prune;
    return this.guard(() => statement.run(this.pool, { runId }));
  }

  async listScorings(runId: string, filter: AttemptFilter = {}): Promise<Scoring[]> {
    return this.guard(async () => {
      const rows = await sql.listScorings.rows<ScoringRow>(this.pool, {
        runId,
        sampleId: filter.sampleId ?? null,
        epoch: filter.epoch ?? null,
      });
      return rows.map((row) => toScoring(runId, row));
    });
  }

  async listAttempts(runId: string, filter: AttemptFilter = {}): Promise<Attempt[]> {
    return this.guard(async () => {
      const statement = filter.asCommitted ? sql.listAttemptsAsCommitted : sql.listAttempts;
      const rows = await statement.tuples<AttemptRow>(this.pool, {
        runId,
        sampleId: filter.sampleId ?? null,
        epoch: filter.epoch ?? null,
      });
      return rows.map(attemptMapper(runId).full);
    });
  }

  async listAttemptHeads(runId: string): Promise<AttemptHead[]> {
    return this.guard(async () => {
      const rows = await sql.listAttemptHeads.tuples<AttemptHeadRow>(this.pool, { runId });
      return rows.map(attemptMapper(runId).head);
    });
  }

  attemptHeadPages(runId: string, pageSize = 1_000): AsyncIterable<AttemptHead[]> {
    return headPages(runId, pageSize, (after, limit) =>
      this.guard(() =>
        sql.attemptHeadPage.tuples<AttemptHeadRow>(this.pool, { runId, ...after, limit }),
      ),
    );
  }

  async listReportInputs(runIds: readonly string[]): Promise<Map<string, ReportInputs>> {
    return this.guard(async () => {
      const params = { runIds: [...runIds] };
      const [fingerprints, heads, usage] = await Promise.all([
        sql.reportFingerprints.rows<{ run_id: string; sample_id: string; fingerprint: string }>(
          this.pool,
          params,
        ),
        sql.reportHeads.tuples<RunHeadRow>(this.pool, params),
        sql.reportScoringUsage.rows<UsageRow>(this.pool, params),
      ]);
      return groupReportInputs(runIds, fingerprints, heads, usage);
    });
  }

  async listOutcomes(runId: string, filter: OutcomeFilter = {}): Promise<OutcomePage> {
    return this.guard(async () => {
      const run = await this.requireRun(this.pool, runId);
      return postgresReadModel.listOutcomes(this.pool, runId, run.config.epochs, filter);
    });
  }

  async listAttemptsAfter(
    runId: string,
    options: { after?: number; limit?: number } = {},
  ): Promise<AttemptFeed> {
    return this.guard(() =>
      postgresReadModel.listAttemptsAfter(this.pool, runId, options.after, options.limit ?? 1_000),
    );
  }

  async readSpend(runId: string, after: SpendCursor = SPEND_START): Promise<StoredSpend> {
    return this.guard(() => postgresReadModel.readSpend(this.pool, runId, after));
  }

  async listBenchmarks(): Promise<BenchmarkSummary[]> {
    return this.guard(() => postgresReadModel.listBenchmarks(this.pool));
  }

  async registerWorker(runId: string, worker: WorkerIdentity): Promise<void> {
    return this.guard(async () => {
      const run = await this.requireRun(this.pool, runId);
      if (!run.config.distributed) throw invalidInput(`run ${runId} is not a distributed run`);
      await leases.register(this.pool, runId, worker);
    });
  }

  async claimLeases(runId: string, token: string, limit: number): Promise<LeaseClaim> {
    return this.guard(() => transaction(this.pool, (tx) => leases.claim(tx, runId, token, limit)));
  }

  async settleLeases(runId: string, token: string, keys: readonly Key[]): Promise<void> {
    return this.guard(() =>
      transaction(this.pool, async (tx) => {
        await this.fence(tx, runId, token, keys);
        await leases.finish(tx, runId, token, keys);
      }),
    );
  }

  async leaveRun(
    runId: string,
    token: string,
    state: Exclude<WorkerState, "active">,
  ): Promise<void> {
    return this.guard(() => transaction(this.pool, (tx) => leases.leave(tx, runId, token, state)));
  }

  async expireWorker(runId: string, token: string): Promise<number> {
    return this.guard(() => transaction(this.pool, (tx) => leases.expire(tx, runId, token)));
  }

  async listWorkers(runId: string): Promise<WorkerRecord[]> {
    return this.guard(() => leases.list(this.pool, runId));
  }

  async reopenDistributed(runId: string): Promise<boolean> {
    return this.guard(() => transaction(this.pool, (tx) => leases.reopen(tx, runId)));
  }

  async requestWorkersCancel(runId: string, note: string): Promise<boolean> {
    return this.guard(() => leases.cancel(this.pool, runId, note));
  }

  async closeDistributed(runId: string, status: RunStatus, note?: RunNote): Promise<boolean> {
    if (status === "running") throw illegalRelease(runId);
    if (typeof note !== "function") {
      return this.guard(() => leases.close(this.pool, runId, status, note ?? null));
    }
    return this.guard(() =>
      transaction(this.pool, async (tx) => {
        // Every commit to the run takes its row lock before it inserts: with the lock held, the
        // spend read is the run's last (a worker that commits after it still holds a live lease,
        // and then the close changes nothing).
        await sql.lockOwner.run(tx, { runId });
        const spent = await postgresReadModel.readSpend(tx, runId, SPEND_START);
        return leases.close(tx, runId, status, note(spent));
      }),
    );
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async mark(tx: Queryable, runId: string, keys: readonly Key[]): Promise<void> {
    if (keys.length === 0) return;
    const [missing] = await sql.markInflight.rows<{ sampleId: string }>(tx, {
      runId,
      sampleIds: keys.map((k) => k.sampleId),
      epochs: keys.map((k) => k.epoch),
    });
    if (missing) throw notInSnapshot(runId, missing.sampleId);
  }

  /**
   * A worker's commit (see `fenceWorker`). Everything about its keys is done under their lease
   * rows' locks; the run's row lock, which puts the run's attempts in commit order (the feed's
   * `seq`), is taken last, right before the INSERT, so workers' commits queue on it for two
   * statements (the INSERT and COMMIT) and not for the whole transaction.
   */
  private async recordWorkerAttempts(
    tx: Queryable,
    runId: string,
    token: string,
    drafts: AttemptDraft[],
    inflight: readonly Key[],
  ): Promise<Attempt[]> {
    await this.mark(tx, runId, inflight);
    return insertAttempts(tx, runId, drafts, async (stored) => {
      if (stored.length > 0) await journal.bind.run(tx, bindColumns(runId, stored));
      // A scored key has its outcome: its lease ends with the commit that gives it.
      await leases.finish(
        tx,
        runId,
        token,
        stored.filter((a) => a.status === "scored"),
      );
      await sql.lockOwner.run(tx, { runId });
    });
  }

  /**
   * True when `token` is a worker of the run holding a live lease on each key (their lease rows
   * locked until the transaction ends); false when it is the run's owner (then `fence` locks
   * the run's row). A token that is neither is `E_FENCED`. The owner's token is read without a
   * lock: a running distributed run never gets an owner (`claimRun`), an owned run no workers.
   */
  private async fenceWorker(
    tx: Queryable,
    runId: string,
    token: string,
    keys: readonly Key[],
  ): Promise<boolean> {
    // A run is distributed or not from its creation on: an ordinary run's writes go straight
    // to `fence` once this store has read that.
    if (this.distributed.get(runId) === false) return false;
    const [row] = await sql.readOwner.rows<{ owner_token: string | null; distributed: boolean }>(
      tx,
      { runId },
    );
    if (!row) throw runNotFound(runId);
    this.distributed.set(runId, row.distributed);
    if (!row.distributed || row.owner_token === token) return false;
    if (await leases.fence(tx, runId, token, keys)) return true;
    throw fenced(runId);
  }

  /**
   * Locks the run's row until the transaction ends and checks that `token` owns the run, or,
   * given the keys written, that it is a worker holding a live lease on each (see the port).
   * The run's row lock stays the one order of a run's writes (its attempt feed's `seq`).
   */
  private async fence(
    tx: Queryable,
    runId: string,
    token: string,
    keys?: readonly Key[],
  ): Promise<"owner" | "worker"> {
    const [row] = await sql.lockOwner.rows<{ owner_token: string | null }>(tx, { runId });
    if (!row) throw runNotFound(runId);
    if (row.owner_token === token) return "owner";
    if (keys && (await leases.fence(tx, runId, token, keys))) return "worker";
    throw fenced(runId);
  }

  private async readRun(db: Queryable, runId: string): Promise<Run | undefined> {
    const [row] = await sql.getRun.rows<DbRun>(db, { runId });
    return row && toRun(row, row.db_now_ms);
  }

  private async requireRun(db: Queryable, runId: string): Promise<Run> {
    const run = await this.readRun(db, runId);
    if (!run) throw runNotFound(runId);
    return run;
  }

  private async counts(run: Run): Promise<RunCounts> {
    const [row] = await sql.countKeys.rows<{ keys: number; scored: number }>(this.pool, {
      runId: run.id,
      epochs: run.config.epochs,
    });
    return countsOf(run, row);
  }

  /**
   * Connects and migrates on first use, then runs `fn`. Driver and connection failures become
   * E_STORE, which the engine may retry; a failed connect is tried again on the next call.
   */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      this.ready ??= this.prepare().catch((error: unknown) => {
        this.ready = undefined;
        throw error;
      });
      await this.ready;
      return await fn();
    } catch (cause) {
      if (isStetError(cause)) {
        // A worker's write refused by its lease is counted on it (after the rollback).
        const worker = cause.code === "E_FENCED" ? cause.details?.worker : undefined;
        if (typeof worker === "string")
          await leases.countRejected(this.pool, worker).catch(() => {});
        throw cause;
      }
      throw new StetError("E_STORE", `store ${this.location}: ${this.explain(cause)}`, { cause });
    }
  }

  private async prepare(): Promise<void> {
    if (!this.create) {
      // current_schema() is the named schema (null when it does not exist), else the default one.
      const { rows } = await this.pool.query<{ found: number }>(
        `SELECT count(*)::int AS found FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = 'schema_migrations'
            AND column_name IN ('version', 'name', 'applied_at')`,
      );
      if (rows[0]?.found !== 3) {
        throw new StetError(
          "E_STORE",
          `no stet store at ${this.location}: it has no stet tables, and a command that only ` +
            "reads does not create them",
        );
      }
    }
    const { schema } = this.session;
    await migratePostgres(this.pool, schema === undefined ? {} : { schema });
  }

  /** The driver's message, and for a lock that stayed held (lock_timeout), who may hold it. */
  private explain(cause: unknown): string {
    if ((cause as { code?: unknown } | null)?.code !== LOCK_NOT_AVAILABLE) return messageOf(cause);
    const { idleMs, lockMs } = this.session;
    return (
      `another session held a lock this statement needs for over ${lockMs / 1000}s ` +
      `(lock_timeout), e.g. a process frozen or hung inside a transaction. stet's own sessions ` +
      `are ended after ${idleMs / 1000}s idle in a transaction; pg_stat_activity shows the ` +
      `holder (pg_terminate_backend ends it). Try again`
    );
  }
}

/** The journal's statements (SQL shared with SQLite, parameters typed for PostgreSQL). */
const journal = {
  dropOpen: statement(
    `DELETE FROM journal j
       USING unnest(@sampleIds::text[], @epochs::int[], @steps::int[], @after::bool[])
         AS d(sample_id, epoch, step, after)
      WHERE j.run_id = @runId AND j.attempt IS NULL AND j.sample_id = d.sample_id
        AND j.epoch = d.epoch AND (j.step = d.step OR (d.after AND j.step >= d.step))`,
    { prepare: true },
  ),
  insertMany: statement(
    `INSERT INTO journal (run_id, attempt, ${JOURNAL_COLUMNS.replace("attempt, ", "")})
     SELECT @runId, NULL, * FROM unnest(@sampleId::text[], @epoch::int[], @step::int[],
       @name::text[], @kind::text[], @inputHash::text[], @input::text[], @result::text[],
       @error::text[], @inputTokens::float8[], @outputTokens::float8[], @costUsd::float8[],
       @recordedAt::text[], @durationMs::float8[], @redacted::text[], @usageDetail::text[])`,
    { prepare: true },
  ),
  /** One statement per batch: a key's open entries become its stored attempt's. */
  bind: statement(
    `UPDATE journal j SET attempt = b.attempt
       FROM unnest(@sampleIds::text[], @epochs::int[], @attempts::int[]) AS b(sample_id, epoch, attempt)
      WHERE j.run_id = @runId AND j.sample_id = b.sample_id AND j.epoch = b.epoch
        AND j.attempt IS NULL`,
    { prepare: true },
  ),
  list: statement(JOURNAL_SQL.listPostgres),
  openKeys: statement(JOURNAL_SQL.openKeys),
  prune: statement(JOURNAL_SQL.prune),
  pruneScored: statement(JOURNAL_SQL.pruneScored),
};

/** Rows of step parameters as one array per column (the run id once), for an `unnest` INSERT. */
function stepColumns(rows: ReturnType<typeof stepParams>[]): Record<string, unknown> {
  const columns: Record<string, unknown[]> = {};
  for (const row of rows) {
    for (const [name, value] of Object.entries(row)) (columns[name] ??= []).push(value);
  }
  return { ...columns, runId: rows[0]!.runId };
}

function bindColumns(runId: string, stored: readonly Attempt[]) {
  // A batch may hold two attempts of one key (an error, then its retry): the first binds.
  return {
    runId,
    sampleIds: stored.map((a) => a.sampleId),
    epochs: stored.map((a) => a.epoch),
    attempts: stored.map((a) => a.attempt),
  };
}
