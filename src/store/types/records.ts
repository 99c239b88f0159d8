/** The records the Store port (`../types.ts`) reads and writes: what its sub-ports take and give. */
import type { Json } from "../../core/json.js";
import type { RunLabels } from "../../core/labels.js";
import type {
  Attempt,
  AttemptStatus,
  Key,
  OwnerIdentity,
  Run,
  RunConfig,
  RunStatus,
  Sample,
  SampleRecord,
  Usage,
} from "../../core/types.js";

/** An attempt without its (possibly large) output and transcript: enough to plan and aggregate. */
export type AttemptHead = Omit<Attempt, "output" | "transcript">;

/**
 * What planning a reuse reads of an attempt (`attemptFactPages`): its key and number, its status
 * now (after any scoring), its sample's fingerprint, whether it executed here (not imported), and
 * its cost (null: none known).
 */
export interface AttemptFact extends Key {
  attempt: number;
  status: AttemptStatus;
  fingerprint: string;
  executed: boolean;
  costUsd: number | null;
}

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
  /** Only runs carrying every one of these labels (`stet list --label branch=main`). */
  labels?: RunLabels;
  limit?: number;
  offset?: number;
}

export interface NewRun {
  id: string;
  config: RunConfig;
  /**
   * The run's snapshot: whole, or in pages as they are read (a million samples need never be
   * held at once). Either way the run is created with all of it or not at all.
   */
  samples: readonly SampleRecord[] | AsyncIterable<readonly SampleRecord[]>;
  owner: OwnerIdentity;
  /** The run's labels (already redacted); none when absent. */
  labels?: RunLabels;
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

/** Which of a run's scorings `reads.listScorings` gives. */
export interface ScoringFilter {
  sampleId?: string;
  epoch?: number;
  /** Sample ids from this one on (inclusive): with `toSampleId`, the keys of a page of samples. */
  fromSampleId?: string;
  /** Sample ids up to this one (inclusive). */
  toSampleId?: string;
  /** Only the scorings of this pass (a rescore's: what it already scored). */
  pass?: string;
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

/** A place in a run's commit order, of its attempts and of its scorings (see `reads.readSpend`). */
export interface SpendCursor {
  attempts: number;
  scorings: number;
}

/** What a heartbeat learns: whether the caller still owns the run, and any cancel asked of it. */
export type HeartbeatReply =
  | { owned: false }
  | {
      owned: true;
      /** Set by `runs.requestCancel` (who asked, and when) until the run changes hands. */
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
  /**
   * A chat step's conversation (`conversationOf` its input) begins with the whole conversation of
   * the key's chat step `step` (of the same execution: open entries, or one attempt's), its
   * `count` messages: only the messages after them are stored, and a read puts the conversation
   * back together. So an agent's journal grows with its conversation, not with its square.
   */
  inputPrefix?: { step: number; count: number };
}

/** A key's open journal entries from `fromStep` on, to be dropped. */
export interface StepDiscard extends Key {
  fromStep: number;
}

/** What commits with a batch of attempts (`attempts.record`), in the same transaction. */
export interface AttemptBatchExtras {
  /** Keys dispatched since the last commit: marked in flight. */
  inflight?: readonly Key[];
  /** Journal entries (and discards of open ones), written before the attempts. */
  steps?: { drafts: StepDraft[]; discard: readonly StepDiscard[] };
}

export interface JournalEntry extends Omit<StepDraft, "truncate" | "inputPrefix"> {
  runId: string;
  /** The attempt it belongs to; null while its execution is open (in flight or interrupted). */
  attempt: number | null;
}

export interface JournalFilter {
  sampleId?: string;
  /** Sample ids from this one on (inclusive): with `toSampleId`, the keys of a page of attempts. */
  fromSampleId?: string;
  /** Sample ids up to this one (inclusive). */
  toSampleId?: string;
  epoch?: number;
  /** A committed attempt's entries, or `"open"` for those of an execution that never committed. */
  attempt?: number | "open";
}

/** Which of a run's reviews to list: a range of sample ids (inclusive), at most `limit`. */
export interface ReviewFilter {
  /** Sample ids from this one on: with `toSampleId`, the keys of a page of attempts. */
  fromSampleId?: string;
  toSampleId?: string;
  /** The first ones only (oldest first). */
  limit?: number;
}

/** What a run's figures (metrics, spend) are computed from, read for several runs at once. */
export interface ReportInputs {
  /** The snapshot's current fingerprint per sample id. */
  fingerprints: Map<string, string>;
  /** The run's attempt heads in key order (as `reads.listAttemptHeads` gives them). */
  heads: AttemptHead[];
  /** The usage of the run's scorings that spent something (a judge's). */
  scoringUsage: Usage[];
}

/** A process that joined a distributed run, as it registers (`leases.register`). */
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

/**
 * What one claim got: the keys now leased to the caller, and what is left for anyone (counted
 * only when the claim was asked to count, or got fewer keys than it asked for: see `claim`).
 */
export interface LeaseClaim {
  keys: Key[];
  /** Keys of the run without an outcome (claimed now, leased elsewhere, or claimable). */
  open?: number;
  /** Of those, leased to another worker whose lease is still live. */
  leasedElsewhere?: number;
}

/** A benchmark is the runs of one eval: membership is the run's eval name, never a list. */
export interface BenchmarkSummary {
  evalName: string;
  runs: number;
  running: number;
  lastCreatedAt: string;
}

/** A reply to store in the cache: the call's canonical text and hash, the credential's keyed hash. */
export interface CacheEntry {
  callHash: string;
  credential: string;
  /** The call's canonical JSON, compared on every read: a hash match alone serves nothing. */
  request: string;
  reply: Json;
  createdAt: string;
}

/** A cached reply as read back. */
export interface CachedReply {
  request: string;
  reply: Json;
  createdAt: string;
}

/** What the cache holds: entries, their size (characters of call and reply), oldest and newest. */
export interface CacheStats {
  entries: number;
  bytes: number;
  oldest: string | null;
  newest: string | null;
}

export type { RateWaits } from "../../core/rate-limits.js";
/**
 * Where a batch submission is: `recorded` before the provider was asked to create it (a kill
 * there leaves no id: a resume looks for the batch by its nonce), `submitted` once its id is
 * known, `ended` once its results were read, `failed` or `cancelled` by the provider or the user,
 * `abandoned` when the provider never created it (its keys go in a new batch).
 */
export type SubmissionStatus =
  "recorded" | "submitted" | "ended" | "failed" | "cancelled" | "abandoned";

/** One key of a submission: its request's custom id and a hash of the request body. */
export interface SubmissionKey {
  sampleId: string;
  epoch: number;
  customId: string;
  request: string;
}

/** A provider batch of a run, as stet recorded it before creating it (`BatchStore`). */
export interface BatchSubmission {
  /** Travels with the batch (OpenAI: metadata; Anthropic: each custom id's prefix). */
  nonce: string;
  runId: string;
  provider: string;
  /** The endpoint without credentials. */
  endpoint: string;
  keys: SubmissionKey[];
  batchId: string | null;
  status: SubmissionStatus;
  note: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * A part of a run for a paged read, one of several read in parallel (`sampleIdMark` splits the
 * run): the samples after `afterSampleId` ("" from the first) up to and including `lastSampleId`
 * (to the last without it), in byte order, with their attempts up to the commit `upTo` (a
 * `listAttemptsAfter` cursor), so that every part reads the same prefix of the commit order
 * however many attempts are committed meanwhile. Without `upTo`, the run's newest commit when the
 * read begins (what a read of the whole run has). The snapshot's pages read past `lastSampleId`
 * by at most a page (the reader stops there); the attempts' never do.
 */
export interface RunPart {
  afterSampleId: string;
  lastSampleId?: string;
  upTo?: number;
}

/**
 * Where a sample is in its run's snapshot: how many samples sort before it (byte order), and the
 * id just before it ("" for the first), after which `samplePages` starts at the sample.
 */
export interface SamplePlace {
  index: number;
  afterSampleId: string;
}
