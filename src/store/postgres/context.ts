import type { HeldFigures } from "./figures.js";
import type { Pool } from "pg";
import { StetError, isStetError } from "../../core/errors.js";
import type { Secret } from "../../core/secrets.js";
import type { Key, Run } from "../../core/types.js";
import { fenced, notInSnapshot, runNotFound } from "../checks.js";
import { countsOf, messageOf } from "../rows.js";
import { toRun, type RunRow } from "../run-rows.js";
import type { RunCounts } from "../types.js";
import type { Queryable } from "./driver.js";
import { postgresLeases as leases } from "./lease-queries.js";
import { migratePostgres } from "./migrate.js";
import { PlannerStats } from "./planner-stats.js";
import { postgresStatements as sql } from "./statements.js";

/** A run row with the database clock beside it. */
export type DbRun = RunRow & { db_now_ms: number };

/** SQLSTATE 55P03: a lock wait ran out (lock_timeout). */
const LOCK_NOT_AVAILABLE = "55P03";

/**
 * What every sub-port of the PostgreSQL store shares: the pool, the session's settings, and the
 * checks and error mapping each method goes through (`guard`, `fence`, `fenceWorker`).
 */
export class PostgresContext {
  /** Whether a run is distributed, by id, as read by a write (it never changes). */
  private readonly distributed = new Map<string, boolean>();
  private ready: Promise<void> | undefined;
  /** Paged snapshots staged so far, to name each stage (see `stageName`). */
  private stages = 0;

  /** The run figures this store wrote last, parsed (see figures.ts `HeldFigures`). */
  readonly lastFigures: HeldFigures = new Map();

  /**
   * The planner's statistics of a run's tables: checked after a paged snapshot is written,
   * before a paged read and a claim, and once a run's commits have grown the attempts.
   */
  readonly plannerStats = new PlannerStats();

  constructor(
    readonly pool: Pool,
    readonly location: string,
    readonly fallbackDir: string,
    private readonly session: { schema: string | undefined; idleMs: number; lockMs: number },
    readonly secrets: readonly Secret[],
    private readonly create: boolean,
  ) {}

  async mark(tx: Queryable, runId: string, keys: readonly Key[]): Promise<void> {
    if (keys.length === 0) return;
    const [missing] = await sql.markInflight.rows<{ sampleId: string }>(tx, {
      runId,
      sampleIds: keys.map((k) => k.sampleId),
      epochs: keys.map((k) => k.epoch),
    });
    if (missing) throw notInSnapshot(runId, missing.sampleId);
  }

  /** Whether this store has read that the run is not distributed: only an owner writes it. */
  ownedRun(runId: string): boolean {
    return this.distributed.get(runId) === false;
  }

  /** What a write read of whether the run is distributed (it never changes). */
  learnDistributed(runId: string, distributed: boolean): void {
    this.distributed.set(runId, distributed);
  }

  /**
   * True when `token` is a worker of the run holding a live lease on each key (their lease rows
   * locked until the transaction ends); false when it is the run's owner (then `fence` locks
   * the run's row). A token that is neither is `E_FENCED`. The owner's token is read without a
   * lock: a running distributed run never gets an owner (`claimRun`), an owned run no workers.
   */
  async fenceWorker(
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
  async fence(
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

  /** A name for a paged snapshot's stage table, unique on every connection (see `openStage`). */
  stageName(): string {
    return `stet_snapshot_stage_${++this.stages}`;
  }

  async readRun(db: Queryable, runId: string): Promise<Run | undefined> {
    const [row] = await sql.getRun.rows<DbRun>(db, { runId });
    return row && toRun(row, row.db_now_ms);
  }

  async requireRun(db: Queryable, runId: string): Promise<Run> {
    const run = await this.readRun(db, runId);
    if (!run) throw runNotFound(runId);
    return run;
  }

  async counts(run: Run): Promise<RunCounts> {
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
  async guard<T>(fn: () => Promise<T>): Promise<T> {
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
          { details: { state: "empty" } },
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
