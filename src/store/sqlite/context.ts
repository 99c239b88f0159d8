import { StetError, isStetError } from "../../core/errors.js";
import type { Key, Run } from "../../core/types.js";
import { fenced, notInSnapshot, runNotFound } from "../checks.js";
import { countsOf, messageOf } from "../rows.js";
import { toRun, type RunRow } from "../run-rows.js";
import type { RunCounts } from "../types.js";
import type { SqliteDatabase } from "./driver.js";
import { corruptStore, isCorruption } from "./file.js";
import type { RunFigures } from "../../core/run-figures.js";
import { SQLITE_FIGURES_STATEMENTS, type FiguresStatements } from "./figures.js";
import { prepareLeases } from "./lease-queries.js";
import { busyMessage, isBusy } from "./lock-holder.js";
import { prepareReadModel } from "./read-queries.js";
import {
  SQLITE_JOURNAL_STATEMENTS,
  SQLITE_STATEMENTS,
  prepareTable,
  type JournalStatements,
  type Statements,
} from "./statements.js";

/**
 * What every sub-port of the SQLite store shares: the database, its statement tables, the
 * store's clock, and the checks and error mapping each method goes through (`guard`, `fence`).
 *
 * `updatedAt` changes when the run's state changes (create, claim, release, interrupt, snapshot
 * update), not on heartbeats: the owner's `heartbeatAt` says when it was last alive.
 */
export class SqliteContext {
  readonly s: Statements;
  private readModel: ReturnType<typeof prepareReadModel> | undefined;
  private journalStatements: JournalStatements | undefined;
  private leaseStatements: ReturnType<typeof prepareLeases> | undefined;
  private figuresStatements: FiguresStatements | undefined;
  /** The run figures this connection wrote last, parsed, by run (see figures.ts `runFigures`). */
  readonly lastFigures = new Map<string, { text: string; run: RunFigures }>();
  /** How many paged snapshots this connection has staged: each stage's table is named by it. */
  private stages = 0;

  constructor(
    readonly db: SqliteDatabase,
    readonly location: string,
    readonly fallbackDir: string,
    readonly now: () => number,
  ) {
    this.s = prepareTable(db, SQLITE_STATEMENTS);
  }

  /** The browsing queries (outcome pages, feeds, benchmarks), prepared on first use: a run needs none. */
  get read(): ReturnType<typeof prepareReadModel> {
    return (this.readModel ??= prepareReadModel(this.db));
  }

  /** The lease statements, prepared on first use: only distributed runs need them. */
  get leases(): ReturnType<typeof prepareLeases> {
    return (this.leaseStatements ??= prepareLeases(this.db, this.now));
  }

  /** The per-run figures' statements (migration 17), prepared on first use. */
  get figures(): FiguresStatements {
    return (this.figuresStatements ??= prepareTable(this.db, SQLITE_FIGURES_STATEMENTS));
  }

  /** The journal's statements, prepared on first use. */
  get journal(): JournalStatements {
    return (this.journalStatements ??= prepareTable(this.db, SQLITE_JOURNAL_STATEMENTS));
  }

  /** Must run inside an IMMEDIATE transaction: the token read then holds until commit. */
  fence(runId: string, token: string, keys?: readonly Key[]): "owner" | "worker" {
    const row = this.s.ownerToken.get(runId);
    if (!row) throw runNotFound(runId);
    if (row.owner_token === token) return "owner";
    // A worker's token: a live lease on each key written (see the port).
    if (keys && this.leases.fence(runId, token, keys)) return "worker";
    throw fenced(runId);
  }

  /** A name for a paged snapshot's stage table, unique on the connection (see `openStage`). */
  stageName(): string {
    return `stet_snapshot_stage_${++this.stages}`;
  }

  requireSample(runId: string, sampleId: string): void {
    if (!this.s.sampleFingerprint.get(runId, sampleId)) throw notInSnapshot(runId, sampleId);
  }

  readRun(runId: string): Run | undefined {
    const row: RunRow | undefined = this.s.getRun.get(runId);
    return row && toRun(row, this.now());
  }

  requireRun(runId: string): Run {
    const run = this.readRun(runId);
    if (!run) throw runNotFound(runId);
    return run;
  }

  counts(run: Run): RunCounts {
    return countsOf(run, this.s.countKeys.get({ runId: run.id, epochs: run.config.epochs }));
  }

  /** Why a statement gave up waiting for the write lock (see `busyMessage`). */
  private busy(): string {
    const timeoutMs = Number(this.db.pragma("busy_timeout", { simple: true }));
    return busyMessage(this.location, timeoutMs);
  }

  /** Driver failures (busy, disk full, closed) become E_STORE, which the engine may retry. */
  guard<T>(fn: () => T): T {
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
