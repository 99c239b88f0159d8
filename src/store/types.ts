import type { Secret } from "../core/secrets.js";
import type {
  Attempt,
  AttemptDraft,
  Key,
  OwnerIdentity,
  Reducer,
  Run,
  OutcomeAsk,
  RerunRecord,
  RerunRequest,
  RunConfig,
  RunStatus,
  SampleRecord,
  Scoring,
  ScoringDraft,
} from "../core/types.js";
import type { Review, ReviewDraft } from "../core/reviews.js";
import type { StoredFiguresRead } from "./figures-rows.js";
import type { RateBudgetStore } from "./types/rate-budget.js";
import type {
  AttemptBatchExtras,
  AttemptFact,
  AttemptFeed,
  AttemptFilter,
  AttemptHead,
  BatchSubmission,
  BenchmarkSummary,
  CacheEntry,
  CacheStats,
  CachedReply,
  HeartbeatReply,
  JournalEntry,
  JournalFilter,
  ReviewFilter,
  LeaseClaim,
  NewRun,
  OutcomeFilter,
  OutcomePage,
  ReportInputs,
  RunCounts,
  RunFilter,
  RunListing,
  RunNote,
  RunPart,
  SamplePlace,
  ScoringFilter,
  SpendCursor,
  StepDiscard,
  StepDraft,
  StoredSpend,
  SubmissionStatus,
  WorkerIdentity,
  WorkerRecord,
  WorkerState,
} from "./types/records.js";

export type * from "./types/records.js";

/**
 * The store port: one sub-port per thing the store owns. Adapters (`sqlite/`, `postgres/`)
 * implement it; the engine depends on nothing else. Every method is async so a networked store
 * fits the same shape.
 *
 * Ownership: a run has at most one owner, identified by a random token. `runs.claim` is a single
 * compare-and-set on that token. Every write that touches a run's state takes the caller's token
 * and is rejected with `E_FENCED` when the token is no longer the owner's, so a presumed-dead
 * owner that wakes up can never clobber its successor's work.
 *
 * A new persistent capability is a new sub-port here (optional, like `leases`, when a store may
 * lack it), a migration per dialect, and a section of the contract suite (`contract/`).
 */
export interface Store {
  /** Human-readable location (file path or connection string without password). */
  readonly location: string;
  /** The credentials of the store's own connection (a URL's password), never to be written. */
  readonly secrets?: readonly Secret[];
  /** Directory where the engine writes attempts it could not commit. */
  readonly fallbackDir: string;

  /** Run records: creation, ownership, heartbeats, cancel requests, configuration, snapshot. */
  readonly runs: RunStore;
  /** Attempt and scoring commits, fenced by the owner's (or a worker's lease's) token. */
  readonly attempts: AttemptStore;
  /** Everything read back: listings, counts, samples, attempts, outcomes, spend, benchmarks. */
  readonly reads: ReadModel;
  /** The step journal: what a resume replays instead of paying for it again. */
  readonly journal: JournalStore;
  /**
   * Workers and key leases: what distributed runs (`config.distributed`) need. Optional: a store
   * without it refuses nothing else, and `--distributed` refuses the store.
   */
  readonly leases?: LeaseStore;
  /** The reply cache of model calls: shared by every run, worker and machine of the store. */
  readonly cache: ReplyCacheStore;
  /** People's reviews of attempts: unfenced, never replaced, apart from the paid layer. */
  readonly reviews: ReviewStore;
  /** Rate-limit budgets per endpoint and the waits each run had: shared by every process. */
  readonly rates: RateBudgetStore;
  /** The provider batches of runs executed with `--batch`: recorded before they are created. */
  readonly batches: BatchStore;

  close(): Promise<void>;
}

export { requireLeases } from "./require-leases.js";
export type { RateBudgetStore } from "./types/rate-budget.js";

/** A run's record and its ownership: what every owner (or claimant) writes outside its attempts. */
export interface RunStore {
  /** Creates the run, owned by `owner` and running, with its sample snapshot, atomically. */
  create(input: NewRun): Promise<Run>;
  get(runId: string): Promise<Run | undefined>;
  /** Replaces snapshot entries (same ids) after the caller chose to re-run changed samples. */
  updateSamples(runId: string, token: string, records: SampleRecord[]): Promise<void>;
  /**
   * Makes `owner` the run's owner if the current owner token equals `expectedToken` (null: the
   * run has no owner). Sets status `running` and a fresh heartbeat. Returns false if another
   * claimant got there first, and for a running distributed run (its workers hold it, ownerless).
   */
  claim(runId: string, owner: OwnerIdentity, expectedToken: string | null): Promise<boolean>;
  /**
   * Refreshes the heartbeat and reports a pending cancel request; `owned: false` when `token` no
   * longer owns the run. With a worker's token it extends the worker's leases, and says `owned:
   * false` once one of them expired or the worker was fenced out.
   */
  heartbeat(runId: string, token: string): Promise<HeartbeatReply>;
  /**
   * Asks the owner holding `expectedToken` to stop (it sees `note` at its next heartbeat); false
   * when the run changed hands meanwhile. A claim or release clears the request.
   */
  requestCancel(runId: string, expectedToken: string, note: string): Promise<boolean>;
  /**
   * Replaces the run's recorded configuration (a rescore's new scorers, an accepted eval change),
   * checked like a new run's; with `reruns`, its re-run requests too (`RerunRecord`), in the same
   * transaction. False when `token` no longer owns the run (nothing written).
   */
  updateConfig(
    runId: string,
    token: string,
    config: RunConfig,
    reruns?: RerunRecord,
  ): Promise<boolean>;
  /** Drops ownership and sets the final status; false when `token` no longer owns the run. */
  release(runId: string, token: string, status: RunStatus, note?: string): Promise<boolean>;
  /**
   * Orphan recovery: if the owner token is still `expectedToken`, clears the owner and marks the
   * run interrupted with `note`. False if the run changed hands meanwhile.
   */
  interruptOrphan(runId: string, expectedToken: string, note: string): Promise<boolean>;
  /** Records keys as dispatched (informational: lets a plan tell interrupted from never started). */
  markInflight(runId: string, token: string, keys: Key[]): Promise<void>;
  listInflight(runId: string): Promise<Key[]>;
}

/**
 * The paid work's commits. A distributed run's worker token fences per key instead of per run:
 * it is accepted only for keys it holds a live lease on (else `E_FENCED`, and the refusal is
 * counted on the worker), and a scored attempt ends its key's lease (done) in the same
 * transaction. The same holds for `runs.markInflight` and `journal.record`.
 */
export interface AttemptStore {
  /**
   * Commits attempts in one transaction, all or nothing, and clears their in-flight marks. In
   * the same transaction (one commit for a batch), `extras.inflight` keys are marked, and
   * `extras.steps` journal entries are written first, as `journal.record` writes them: a key's
   * entries precede its attempt, which binds them. Rejects with `E_FENCED` if `token` does not
   * own the run, and with `E_ALREADY_SCORED` if a key already has a scored attempt for the same
   * fingerprint (completed work stands). A draft with `rerunAfter` (a re-run on request) is
   * refused only when a scored attempt numbered after that one exists; `rerunAfter` itself is
   * not stored.
   */
  record(
    runId: string,
    token: string,
    drafts: AttemptDraft[],
    extras?: AttemptBatchExtras,
  ): Promise<Attempt[]>;
  /**
   * Commits scorings of stored attempts in one transaction, all or nothing; the store numbers
   * each after its attempt's earlier ones. Rejects with `E_FENCED` as `record` does, and with
   * `E_INVALID_INPUT` for an attempt the run does not have or one without an output (its solver
   * failed). The attempts themselves are never touched.
   */
  recordScorings(runId: string, token: string, drafts: ScoringDraft[]): Promise<Scoring[]>;
}

/**
 * Reads of what the store holds. Here and in every listing an attempt's status, scores and error
 * are its current ones: its latest scoring's, else its own.
 */
export interface ReadModel {
  listRuns(filter?: RunFilter): Promise<RunListing[]>;
  countKeys(runId: string): Promise<RunCounts>;
  getSamples(runId: string): Promise<SampleRecord[]>;
  /** The snapshot's ids and fingerprints only, ordered by sample id: what a resume plan compares. */
  listSampleFingerprints(runId: string): Promise<{ sampleId: string; fingerprint: string }[]>;
  /**
   * The run's scorings (the history of its rescores), by sample id, epoch, attempt, scoring; with
   * a filter, those of a key, of a range of sample ids (a page's) or of one pass.
   */
  listScorings(runId: string, filter?: ScoringFilter): Promise<Scoring[]>;
  /** The snapshot's ids and fingerprints a page at a time (keyset, byte order, as `attemptPages`). */
  sampleFingerprintPages(
    runId: string,
    pageSize?: number,
    start?: RunPart,
  ): AsyncIterable<{ sampleId: string; fingerprint: string }[]>;
  /** The whole snapshot (`getSamples`' records) in the same order and pages. */
  samplePages(runId: string, pageSize?: number, start?: RunPart): AsyncIterable<SampleRecord[]>;
  /** A sample's `SamplePlace` in the snapshot; undefined if the snapshot lacks the sample. */
  samplePlace(runId: string, sampleId: string): Promise<SamplePlace | undefined>;
  /** The `count`-th sample id after `afterSampleId` ("": the first's) in byte order: a `RunPart`'s end. */
  sampleIdMark(runId: string, afterSampleId: string, count: number): Promise<string | undefined>;
  /**
   * The run's re-run requests in key order, a page at a time (keyset); `open`: those not done;
   * `asked`: instead, the keys an `OutcomeAsk` names of its outcomes (none before its figures are built).
   */
  rerunPages(
    runId: string,
    pageSize?: number,
    options?: { open?: boolean; asked?: OutcomeAsk },
  ): AsyncIterable<RerunRequest[]>;
  /**
   * The run's open re-run requests (`rerunPages` with `open`) counted by what decides where a
   * plan counts their keys (`RerunFact`), in one read: what a stored report's plan is corrected by.
   */
  rerunFacts(runId: string): Promise<RerunFact[]>;
  /** All attempts of a run, ordered by sample id, epoch, attempt. */
  listAttempts(runId: string, filter?: AttemptFilter): Promise<Attempt[]>;
  /** Like listAttempts without outputs and transcripts; what planning and metrics need. */
  listAttemptHeads(runId: string): Promise<AttemptHead[]>;
  /**
   * The same heads, in the same order, a page at a time: what a report folds over without
   * holding every attempt of a large run. Pages are read one by one (keyset), not from one open
   * cursor, so other statements may run between them.
   */
  attemptHeadPages(runId: string, pageSize?: number): AsyncIterable<AttemptHead[]>;
  /**
   * The same attempts, in the same order, a page at a time, as the few columns planning a reuse
   * reads (`AttemptFact`): no score, error or usage is parsed, no head built.
   */
  attemptFactPages(runId: string, pageSize?: number): AsyncIterable<AttemptFact[]>;
  /**
   * What a resume plans from when it need not read every attempt (`core/plan.ts`'s `open`): the
   * ids of the snapshot's samples with a key (epoch 1 to `epochs`) that has no scored attempt of
   * the sample's snapshot fingerprint, in sample-id (byte) order, and every attempt head of those
   * samples, in `listAttemptHeads`' order. Of a complete run: none, and no attempt row is mapped.
   */
  openSampleHeads(
    runId: string,
    epochs: number,
  ): Promise<{ sampleIds: string[]; heads: AttemptHead[] }>;
  /**
   * What an import plans from (`evalport/plan-import.ts`): of the samples `sampleIds` names
   * (repeats and ids the snapshot lacks allowed), the snapshot's ids and fingerprints, in
   * sample-id (byte) order, and every attempt head of those samples, in `listAttemptHeads`' order;
   * read 1,000 ids at a time, nothing of the run's other samples. Of an unknown run: none.
   */
  sampleHeads(
    runId: string,
    sampleIds: Iterable<string>,
  ): Promise<{ fingerprints: { sampleId: string; fingerprint: string }[]; heads: AttemptHead[] }>;
  /** The snapshot's records of the samples `sampleIds` names, as `sampleHeads` reads them. */
  sampleRecordsOf(runId: string, sampleIds: Iterable<string>): Promise<SampleRecord[]>;
  /** Whole attempts (outputs, transcripts) in the same order and pages: what copying a run reads. */
  attemptPages(runId: string, pageSize?: number, start?: RunPart): AsyncIterable<Attempt[]>;
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
   * The report inputs of several runs in one read per table (not a query per run): what a
   * listing's metrics and cost are folded from. Every id asked for has an entry (empty for an id
   * the store has no run of).
   */
  listReportInputs(runIds: readonly string[]): Promise<Map<string, ReportInputs>>;
  /**
   * A run's figures as the store keeps them, up to date with every commit (`core/run-figures.ts`,
   * SQLite migration 17, PostgreSQL 16): its sums, its first error examples per type, and the
   * outcomes of `keys`; built from every stored row by this read when the run has none yet (one
   * stored before the migration), with `reducer`. Throws `E_RUN_NOT_FOUND`.
   */
  readFigures(runId: string, reducer: Reducer, keys?: readonly Key[]): Promise<StoredFiguresRead>;
  /** One entry per eval name that has runs, the most recently started first. */
  listBenchmarks(): Promise<BenchmarkSummary[]>;
}

/** The step journal: `ctx.step` and `ctx.chat` results recorded before the agent saw them. */
export interface JournalStore {
  /**
   * Writes step-journal entries in one transaction, all or nothing, fenced like
   * `attempts.record` (`E_FENCED`). Entries are open (attempt null) until the key's next attempt
   * commits: `attempts.record` binds a key's open entries to the attempt it stores. An open entry
   * at the same step replaces the one there. `discard` drops a key's open entries from a step on
   * (an execution that ended before replaying them all), in the same transaction.
   */
  record(
    runId: string,
    token: string,
    drafts: StepDraft[],
    discard?: readonly StepDiscard[],
  ): Promise<void>;
  /** Journal entries by sample id, epoch, attempt (open ones last), step. */
  list(runId: string, filter?: JournalFilter): Promise<JournalEntry[]>;
  /** The keys with open entries: those a resume replays. Ordered by sample id, epoch. */
  keys(runId: string): Promise<Key[]>;
  /**
   * Deletes the journal of committed attempts (open entries stay); how many entries went. The
   * journal of a key's latest attempt stays when that attempt is an error: a resume's new attempt
   * replays it. With `keep: "failed"` the journals of attempts that ended in error stay too.
   */
  prune(runId: string, keep?: "open" | "failed"): Promise<number>;
}

/**
 * The reply cache (`cache` of an eval): successful model replies keyed by a hash of the call and
 * a keyed hash of the credential (never the credential). Writes are not fenced: a reply is the
 * same whoever stores it, and the first stored stays.
 */
export interface ReplyCacheStore {
  /** The store's random salt for credential hashes, made on first use (the same for everyone). */
  salt(): Promise<string>;
  /** The entry of a call and credential stored at or after `since` (ISO time), if any. */
  get(callHash: string, credential: string, since: string): Promise<CachedReply | undefined>;
  /** Stores a reply unless the call and credential have one already. */
  put(entry: CacheEntry): Promise<void>;
  stats(): Promise<CacheStats>;
  /** Deletes entries stored before `before` (ISO time); how many went. */
  prune(before: string): Promise<number>;
  /** Deletes every entry; how many went. */
  clear(): Promise<number>;
}

/**
 * Batch submissions (`--batch`): each is recorded before the provider is asked to create it, so a
 * kill at any point leaves a record a resume adopts instead of buying the keys again. Unfenced:
 * a record is written once by the owner that submits it; its status only moves forward.
 */
export interface BatchStore {
  /** Records a submission (status `recorded`, no batch id) before its batch is created. */
  record(
    submission: Omit<BatchSubmission, "batchId" | "status" | "note" | "updatedAt">,
  ): Promise<void>;
  /** Sets what became of a submission: its batch id once known, its status, a note (a reason). */
  update(
    nonce: string,
    change: { batchId?: string; status: SubmissionStatus; note?: string },
    at: string,
  ): Promise<void>;
  /** The run's submissions, oldest first. */
  list(runId: string): Promise<BatchSubmission[]>;
}

/**
 * Distributed runs (`config.distributed`): `runs.create` also writes one lease row per key, and
 * registered workers lease keys instead of one owner holding the run (see `AttemptStore` for how
 * a worker's writes are fenced).
 */
export interface LeaseStore {
  /** Adds a worker (state active) to a distributed run (`E_RUN_NOT_FOUND`; `E_INVALID_INPUT` if not distributed). */
  register(runId: string, worker: WorkerIdentity): Promise<void>;
  /**
   * Leases up to `limit` keys without an outcome and without a live lease to the worker, in
   * epoch then sample order, in one statement (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite:
   * `BEGIN IMMEDIATE`): concurrent claimants never get the same key. A worker whose expired
   * lease is taken is marked lost. None for a worker that is not active.
   *
   * The run's open keys are counted (`open`, `leasedElsewhere`) unless `count` is false, and
   * always when the claim got fewer than `limit` keys (what tells a worker that none is left for
   * it): a count reads every open lease of the run (33 ms at 200,000 on PostgreSQL), which a
   * claim of every batch made quadratic in the run's size.
   */
  claim(
    runId: string,
    token: string,
    limit: number,
    options?: { count?: boolean },
  ): Promise<LeaseClaim>;
  /** Ends the worker's leases of `keys` with their outcome (a final error): done, counted on it. */
  settle(runId: string, token: string, keys: readonly Key[]): Promise<void>;
  /** The worker leaves: its unfinished leases are claimable at once, its state becomes `state`. */
  leave(runId: string, token: string, state: Exclude<WorkerState, "active">): Promise<void>;
  /** A worker found dead (its pid gone): its leases expire now and it is marked lost. How many. */
  expire(runId: string, token: string): Promise<number>;
  /** The run's workers, in the order they joined. */
  list(runId: string): Promise<WorkerRecord[]>;
  /**
   * Opens a distributed run to workers again (a resume): status running, cancel request cleared,
   * keys without a scored attempt for their current fingerprint claimable, those with one done (a
   * seed's or an import's). False when it is not a distributed run.
   */
  reopen(runId: string): Promise<boolean>;
  /** Asks every worker of a running distributed run to stop (they see `note` at their heartbeat). */
  requestCancel(runId: string, note: string): Promise<boolean>;
  /**
   * Sets a running distributed run's final status when no live lease remains (and, for completed
   * or errored, every key is done); false otherwise: another worker settles it. A note that is a
   * function is given the run's whole stored spend, read in the same transaction as the close,
   * after which no worker can write: what it says is what the run spent in the end.
   */
  closeRun(runId: string, status: RunStatus, note?: RunNote): Promise<boolean>;
}

/**
 * Reviews: a person's scoring of an attempt (`core/reviews.ts`). Unfenced (a review needs no
 * ownership of the run: it may be made while the run runs, or long after), append-only, and never
 * touching attempts or scorings.
 */
export interface ReviewStore {
  /**
   * Stores the batch in one transaction, in order: each names a stored attempt of the run, else
   * nothing is stored (`E_INVALID_INPUT`). Returns them with their `seq`.
   */
  record(runId: string, drafts: readonly ReviewDraft[]): Promise<Review[]>;
  /**
   * Every review of the run, in the order they were stored (oldest first), superseded ones too;
   * with a filter, those of a range of sample ids (a streamed export's page), or the first few.
   */
  list(runId: string, filter?: ReviewFilter): Promise<Review[]>;
}

/**
 * How many open re-run requests' keys (`keys`) have these facts: the key's outcome as the run's
 * figures keep it (`held`: its status, none when it has no attempt for the sample's current
 * fingerprint; `heldScorer`: its error is a scorer's), whether it is in flight, and its latest
 * attempt for that fingerprint after the one the request follows (an open request has no scored
 * one after it).
 */
export interface RerunFact {
  held: "scored" | "error" | null;
  heldScorer: boolean;
  flying: boolean;
  later: "none" | "error" | "scorer-error";
  keys: number;
}
