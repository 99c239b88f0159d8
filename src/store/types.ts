import type { Json } from "../core/json.js";
import type { Secret } from "../core/secrets.js";
import type {
  Attempt,
  AttemptDraft,
  AttemptStatus,
  Key,
  OwnerIdentity,
  Run,
  RunConfig,
  RunStatus,
  Sample,
  SampleRecord,
  Scoring,
  ScoringDraft,
  Usage,
} from "../core/types.js";

/** An attempt without its (possibly large) output and transcript: enough to plan and aggregate. */
export type AttemptHead = Omit<Attempt, "output" | "transcript">;

/** Key counts computed from the stored attempts, never from a cached copy. */
export interface RunCounts {
  /** samples × epochs */
  total: number;
  /** keys with a scored attempt for the sample's current fingerprint */
  scored: number;
  /** keys whose attempts (for the current fingerprint) are all errors */
  errored: number;
  /** total − scored */
  remaining: number;
}

export interface RunListing {
  run: Run;
  counts: RunCounts;
}

export interface RunFilter {
  status?: RunStatus;
  evalName?: string;
  limit?: number;
  offset?: number;
}

export interface NewRun {
  id: string;
  config: RunConfig;
  samples: SampleRecord[];
  owner: OwnerIdentity;
}

export interface AttemptFilter {
  sampleId?: string;
  epoch?: number;
  /**
   * The attempts as they were committed: the status, scores and error of their own execution,
   * before any later scoring (what a sample's history shows beside its scorings).
   */
  asCommitted?: boolean;
}

/** A key's current outcome: its scored or errored attempt, or `pending` while it has none. */
export type OutcomeStatus = AttemptStatus | "pending";

export interface OutcomeFilter {
  sampleId?: string;
  status?: OutcomeStatus;
  /** Only outcomes with a (non-null) value from this scorer; with `result`, judged by it alone. */
  scorer?: string;
  /**
   * Scored outcomes only. `pass`: every value (of `scorer`, if given) is 1 and there is at least
   * one; `fail`: some value is below 1.
   */
  result?: "pass" | "fail";
  /** Case-insensitive (ASCII) substring of the sample id, the sample's JSON or the output's JSON. */
  search?: string;
  limit?: number;
  offset?: number;
}

/** One key of a run with its current outcome, for tables of samples. */
export interface OutcomeEntry extends Key {
  sample: Sample;
  /** The sample's fingerprint in the run's snapshot. */
  fingerprint: string;
  status: OutcomeStatus;
  /** Attempts stored for the key, those of an old fingerprint included. */
  attempts: number;
  /** The outcome's attempt without its transcript; null while pending. */
  outcome: (AttemptHead & { output: Json }) | null;
}

export interface OutcomePage {
  /** Keys matching the filter, before limit and offset. */
  total: number;
  /** In key order: sample id (binary), then epoch. */
  entries: OutcomeEntry[];
}

/** Attempts in commit order, and the cursor to continue from. */
export interface AttemptFeed {
  attempts: AttemptHead[];
  cursor: number;
}

/**
 * What a run's stored rows spent, as the spend cap and the reports count it: the known cost of
 * its executed attempts (imported ones were paid for elsewhere) and of its scorings (a judge's),
 * and how many of those attempts had a known cost (the cap's mean is per priced attempt).
 */
export interface StoredSpend {
  costUsd: number;
  pricedAttempts: number;
  /** The newest attempt and scoring the read covered: read on from here, nothing is counted twice. */
  cursor: SpendCursor;
}

/** A run's note, or one written from what the run spent (read when the note is written). */
export type RunNote = string | ((spent: StoredSpend) => string);

/** A place in a run's commit order, of its attempts and of its scorings (see `readSpend`). */
export interface SpendCursor {
  attempts: number;
  scorings: number;
}

/** What a heartbeat learns: whether the caller still owns the run, and any cancel asked of it. */
export type HeartbeatReply =
  | { owned: false }
  | {
      owned: true;
      /** Set by `requestCancel` (who asked, and when) until the run changes hands. */
      cancelRequested: string | null;
    };

/** How a journaled step failed: what its rethrow on replay is typed from. */
export interface StepError {
  message: string;
  /** The thrown error's `type` (e.g. "provider"), when it had one. */
  type?: string;
  status?: number;
}

/**
 * One entry of the step journal: a `ctx.step` (or `ctx.chat`, kind `chat`) result of a key's
 * execution, recorded before the agent saw it. `step` is the call's index in the execution.
 */
export interface StepDraft extends Key {
  step: number;
  name: string;
  kind: "step" | "chat";
  /** sha256 (hex) of the canonical JSON of the step's input: what replay matches on. */
  inputHash: string;
  /** The input as recorded (redacted; a chat's model, messages and parameters only). */
  input: Json;
  /** Null when the step threw (see `error`). */
  result: Json;
  error: StepError | null;
  /** A chat step's tokens and cost. */
  usage: Usage | null;
  recordedAt: string;
  durationMs: number;
  redacted?: string[];
  /**
   * Replay diverged here: the key's open entries from this step on (those of the interrupted
   * execution) are discarded in the same transaction, before this one is written.
   */
  truncate?: boolean;
}

/** A key's open journal entries from `fromStep` on, to be dropped. */
export interface StepDiscard extends Key {
  fromStep: number;
}

/** What commits with a batch of attempts (`recordAttempts`), in the same transaction. */
export interface AttemptBatchExtras {
  /** Keys dispatched since the last commit: marked in flight. */
  inflight?: readonly Key[];
  /** Journal entries (and discards of open ones), written before the attempts. */
  steps?: { drafts: StepDraft[]; discard: readonly StepDiscard[] };
}

export interface JournalEntry extends Omit<StepDraft, "truncate"> {
  runId: string;
  /** The attempt it belongs to; null while its execution is open (in flight or interrupted). */
  attempt: number | null;
}

export interface JournalFilter {
  sampleId?: string;
  epoch?: number;
  /** A committed attempt's entries, or `"open"` for those of an execution that never committed. */
  attempt?: number | "open";
}

/** What a run's figures (metrics, spend) are computed from, read for several runs at once. */
export interface ReportInputs {
  /** The snapshot's current fingerprint per sample id. */
  fingerprints: Map<string, string>;
  /** The run's attempt heads in key order (as listAttemptHeads gives them). */
  heads: AttemptHead[];
  /** The usage of the run's scorings that spent something (a judge's). */
  scoringUsage: Usage[];
}

/** A process that joined a distributed run, as it registers (`registerWorker`). */
export interface WorkerIdentity extends OwnerIdentity {
  concurrency: number;
  /** How long its leases live without a heartbeat (`STET_LEASE_MS`). */
  leaseMs: number;
}

/** Where a worker is: executing, left with nothing to claim, stopped early, or fenced out. */
export type WorkerState = "active" | "finished" | "stopped" | "lost";

/** A worker of a distributed run as the store knows it: what show, the API and the UI list. */
export interface WorkerRecord {
  token: string;
  host: string;
  pid: number;
  concurrency: number;
  leaseMs: number;
  startedAt: string;
  heartbeatAt: string;
  /** On the store's clock, like an owner's. */
  heartbeatAgeMs: number;
  /** Keys it gave their outcome. */
  keysDone: number;
  /** Its writes refused by the lease fence (after its lease expired). */
  rejected: number;
  state: WorkerState;
}

/** What one claim got: the keys now leased to the caller, and what is left for anyone. */
export interface LeaseClaim {
  keys: Key[];
  /** Keys of the run without an outcome (claimed now, leased elsewhere, or claimable). */
  open: number;
  /** Of those, leased to another worker whose lease is still live. */
  leasedElsewhere: number;
}

/** A benchmark is the runs of one eval: membership is the run's eval name, never a list. */
export interface BenchmarkSummary {
  evalName: string;
  runs: number;
  running: number;
  lastCreatedAt: string;
}

/**
 * The store port. Adapters (sqlite.ts, later postgres.ts) implement it; the engine depends on
 * nothing else. Every method is async so a networked store fits the same shape.
 *
 * Ownership: a run has at most one owner, identified by a random token. `claimRun` is a single
 * compare-and-set on that token. Every write that touches a run's state takes the caller's token
 * and is rejected with `E_FENCED` when the token is no longer the owner's, so a presumed-dead
 * owner that wakes up can never clobber its successor's work.
 */
export interface Store {
  /** Human-readable location (file path or connection string without password). */
  readonly location: string;
  /** The credentials of the store's own connection (a URL's password), never to be written. */
  readonly secrets?: readonly Secret[];
  /** Directory where the engine writes attempts it could not commit. */
  readonly fallbackDir: string;

  /** Creates the run, owned by `owner` and running, with its sample snapshot, atomically. */
  createRun(input: NewRun): Promise<Run>;
  getRun(runId: string): Promise<Run | undefined>;
  listRuns(filter?: RunFilter): Promise<RunListing[]>;
  countKeys(runId: string): Promise<RunCounts>;
  getSamples(runId: string): Promise<SampleRecord[]>;
  /** The snapshot's ids and fingerprints only, ordered by sample id: what a resume plan compares. */
  listSampleFingerprints(runId: string): Promise<{ sampleId: string; fingerprint: string }[]>;
  /** Replaces snapshot entries (same ids) after the caller chose to re-run changed samples. */
  updateSamples(runId: string, token: string, records: SampleRecord[]): Promise<void>;

  /**
   * Makes `owner` the run's owner if the current owner token equals `expectedToken` (null: the
   * run has no owner). Sets status `running` and a fresh heartbeat. Returns false if another
   * claimant got there first, and for a running distributed run (its workers hold it, ownerless).
   */
  claimRun(runId: string, owner: OwnerIdentity, expectedToken: string | null): Promise<boolean>;
  /**
   * Refreshes the heartbeat and reports a pending cancel request; `owned: false` when `token` no
   * longer owns the run.
   */
  heartbeat(runId: string, token: string): Promise<HeartbeatReply>;
  /**
   * Asks the owner holding `expectedToken` to stop (it sees `note` at its next heartbeat); false
   * when the run changed hands meanwhile. A claim or release clears the request.
   */
  requestCancel(runId: string, expectedToken: string, note: string): Promise<boolean>;
  /**
   * Replaces the run's recorded configuration (a rescore's new scorers, an accepted eval change),
   * checked like a new run's; false when `token` no longer owns the run.
   */
  updateRunConfig(runId: string, token: string, config: RunConfig): Promise<boolean>;
  /** Drops ownership and sets the final status; false when `token` no longer owns the run. */
  releaseRun(runId: string, token: string, status: RunStatus, note?: string): Promise<boolean>;
  /**
   * Orphan recovery: if the owner token is still `expectedToken`, clears the owner and marks the
   * run interrupted with `note`. False if the run changed hands meanwhile.
   */
  interruptOrphan(runId: string, expectedToken: string, note: string): Promise<boolean>;

  /** Records keys as dispatched (informational: lets a plan tell interrupted from never started). */
  markInflight(runId: string, token: string, keys: Key[]): Promise<void>;
  listInflight(runId: string): Promise<Key[]>;

  /**
   * Commits attempts in one transaction, all or nothing, and clears their in-flight marks. In
   * the same transaction (one commit for a batch), `extras.inflight` keys are marked, and
   * `extras.steps` journal entries are written first, as `recordSteps` writes them: a key's
   * entries precede its attempt, which binds them. Rejects with `E_FENCED` if `token` does not
   * own the run, and with `E_ALREADY_SCORED` if a key already has a scored attempt for the same
   * fingerprint (completed work stands). A draft with `rerunAfter` (a re-run on request) is
   * refused only when a scored attempt numbered after that one exists; `rerunAfter` itself is
   * not stored.
   */
  recordAttempts(
    runId: string,
    token: string,
    drafts: AttemptDraft[],
    extras?: AttemptBatchExtras,
  ): Promise<Attempt[]>;
  /**
   * Commits scorings of stored attempts in one transaction, all or nothing; the store numbers
   * each after its attempt's earlier ones. Rejects with `E_FENCED` as recordAttempts does, and
   * with `E_INVALID_INPUT` for an attempt the run does not have or one without an output (its
   * solver failed). The attempts themselves are never touched.
   */
  recordScorings(runId: string, token: string, drafts: ScoringDraft[]): Promise<Scoring[]>;
  /** The run's scorings (the history of its rescores), by sample id, epoch, attempt, scoring. */
  listScorings(runId: string, filter?: AttemptFilter): Promise<Scoring[]>;
  /**
   * All attempts of a run, ordered by sample id, epoch, attempt. Here and in every listing an
   * attempt's status, scores and error are its current ones: its latest scoring's, else its own.
   */
  listAttempts(runId: string, filter?: AttemptFilter): Promise<Attempt[]>;
  /** Like listAttempts without outputs and transcripts; what planning and metrics need. */
  listAttemptHeads(runId: string): Promise<AttemptHead[]>;
  /**
   * The same heads, in the same order, a page at a time: what a report folds over without
   * holding every attempt of a large run. Pages are read one by one (keyset), not from one open
   * cursor, so other statements may run between them.
   */
  attemptHeadPages(runId: string, pageSize?: number): AsyncIterable<AttemptHead[]>;

  /** Each key of the run with its current outcome, filtered and paged (E_RUN_NOT_FOUND). */
  listOutcomes(runId: string, filter?: OutcomeFilter): Promise<OutcomePage>;
  /**
   * A feed of the run's attempts in commit order. Without `after`: no attempts, and the cursor of
   * the newest attempt (follow from now). With `after`: up to `limit` (default 1,000) attempts
   * committed after that cursor, and the cursor of the last one returned (else `after` itself).
   */
  listAttemptsAfter(
    runId: string,
    options?: { after?: number; limit?: number },
  ): Promise<AttemptFeed>;
  /**
   * The run's stored spend (`StoredSpend`), read in one statement: over every row, or with
   * `after` over the rows committed after that cursor. Reads chained from one cursor to the next
   * add up to the sum over the stored rows, each counted once (commit order, as the feed's).
   */
  readSpend(runId: string, after?: SpendCursor): Promise<StoredSpend>;
  /**
   * Writes step-journal entries in one transaction, all or nothing, fenced like recordAttempts
   * (`E_FENCED`). Entries are open (attempt null) until the key's next attempt commits:
   * recordAttempts binds a key's open entries to the attempt it stores. An open entry at the
   * same step replaces the one there. `discard` drops a key's open entries from a step on (an
   * execution that ended before replaying them all), in the same transaction.
   */
  recordSteps(
    runId: string,
    token: string,
    drafts: StepDraft[],
    discard?: readonly StepDiscard[],
  ): Promise<void>;
  /** Journal entries by sample id, epoch, attempt (open ones last), step. */
  listJournal(runId: string, filter?: JournalFilter): Promise<JournalEntry[]>;
  /** The keys with open entries: those a resume replays. Ordered by sample id, epoch. */
  listJournalKeys(runId: string): Promise<Key[]>;
  /**
   * Deletes the journal of committed attempts (open entries stay); how many entries went. With
   * `keep: "failed"` the journals of attempts that ended in error stay too.
   */
  pruneJournal(runId: string, keep?: "open" | "failed"): Promise<number>;

  /**
   * The report inputs of several runs in one read per table (not a query per run): what a
   * listing's metrics and cost are folded from. Every id asked for has an entry (empty for an id
   * the store has no run of).
   */
  listReportInputs(runIds: readonly string[]): Promise<Map<string, ReportInputs>>;

  /** One entry per eval name that has runs, the most recently started first. */
  listBenchmarks(): Promise<BenchmarkSummary[]>;

  // Distributed runs (`config.distributed`): createRun also writes one lease row per key. A
  // worker's token fences its writes per key instead of per run: recordAttempts, recordScorings,
  // recordSteps and markInflight accept a worker's token only for keys it holds a live lease on
  // (else `E_FENCED`, and the refusal is counted on the worker), and a scored attempt ends its
  // key's lease (done) in the same transaction. `heartbeat` with a worker's token extends its
  // leases, and says `owned: false` once one of them expired or the worker was fenced out.

  /** Adds a worker (state active) to a distributed run (`E_RUN_NOT_FOUND`; `E_INVALID_INPUT` if not distributed). */
  registerWorker(runId: string, worker: WorkerIdentity): Promise<void>;
  /**
   * Leases up to `limit` keys without an outcome and without a live lease to the worker, in
   * epoch then sample order, in one statement (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite:
   * `BEGIN IMMEDIATE`): concurrent claimants never get the same key. A worker whose expired
   * lease is taken is marked lost. None for a worker that is not active.
   */
  claimLeases(runId: string, token: string, limit: number): Promise<LeaseClaim>;
  /** Ends the worker's leases of `keys` with their outcome (a final error): done, counted on it. */
  settleLeases(runId: string, token: string, keys: readonly Key[]): Promise<void>;
  /** The worker leaves: its unfinished leases are claimable at once, its state becomes `state`. */
  leaveRun(runId: string, token: string, state: Exclude<WorkerState, "active">): Promise<void>;
  /** A worker found dead (its pid gone): its leases expire now and it is marked lost. How many. */
  expireWorker(runId: string, token: string): Promise<number>;
  /** The run's workers, in the order they joined. */
  listWorkers(runId: string): Promise<WorkerRecord[]>;
  /**
   * Opens a distributed run to workers again (a resume): status running, cancel request cleared,
   * and keys without a scored attempt for their current fingerprint claimable again. False when
   * it is not a distributed run.
   */
  reopenDistributed(runId: string): Promise<boolean>;
  /** Asks every worker of a running distributed run to stop (they see `note` at their heartbeat). */
  requestWorkersCancel(runId: string, note: string): Promise<boolean>;
  /**
   * Sets a running distributed run's final status when no live lease remains (and, for completed
   * or errored, every key is done); false otherwise: another worker settles it. A note that is a
   * function is given the run's whole stored spend, read in the same transaction as the close,
   * after which no worker can write: what it says is what the run spent in the end.
   */
  closeDistributed(runId: string, status: RunStatus, note?: RunNote): Promise<boolean>;

  close(): Promise<void>;
}
