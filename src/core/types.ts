import type { RunLabels } from "./labels.js";
import type { Json } from "./json.js";
import type { AttemptLimit, SampleLimits } from "./limits.js";
import type { RecordedReuse } from "./reuse-plan.js";

/** One dataset row after mapping: `id` is stable and unique within the dataset. */
export interface Sample {
  id: string;
  /** A string, or an array of chat messages `{ role, content }`. */
  input: Json;
  target?: Json;
  metadata?: Record<string, Json>;
}

/** A sample as the run recorded it: the identity a resume compares against. */
export interface SampleRecord {
  sample: Sample;
  /** sha256 of the canonical JSON of input, target and metadata. */
  fingerprint: string;
}

/** The unit of work. Epochs are 1-based. */
export interface Key {
  sampleId: string;
  epoch: number;
}

/** Token figures of model calls: the tiers a provider bills at, and their cost. */
export type UsageFigures = {
  /** Every input token, cached and cache-written ones included. */
  inputTokens: number;
  /** Every output token, reasoning ones included. */
  outputTokens: number;
  /** Of `inputTokens`, those read from the provider's prompt cache. */
  cachedInputTokens?: number;
  /** Of `inputTokens`, those written to the provider's prompt cache. */
  cacheWriteTokens?: number;
  /** Of `outputTokens`, those the model spent reasoning. */
  reasoningTokens?: number;
  /** US dollars; absent when the price (of any tier used) is unknown. */
  costUsd?: number;
};

/** US dollars per one million tokens, by the tier a token is billed at. */
export type PriceTiers = {
  /** Input tokens neither read from nor written to a prompt cache. */
  input: number;
  output: number;
  /** Input tokens read from the prompt cache; unknown: a call that read any has no cost. */
  cachedInput?: number;
  /** Input tokens written to the prompt cache; unknown: a call that wrote any has no cost. */
  cacheWrite?: number;
};

/** A model's prices: the standard tiers, and those of the provider's batch API when known. */
export type Price = PriceTiers & { batch?: PriceTiers };

/**
 * What an attempt's (or a call's) model calls used. An attempt's figures are what it counts
 * (what spend sums): every call that produced its output, replayed journal calls included, but
 * the calls an errored attempt of its key bought; `reused` is the part of the figures replayed
 * from the journal (paid for by an interrupted execution), not bought now. `carried` is the calls
 * it replayed from an errored attempt of its key, counted in that attempt's figures: part of its
 * trajectory (trajectoryUsage, what exports show), not of its figures. Absent: nothing was
 * replayed or carried (and attempts stored before stet recorded it).
 */
export type Usage = UsageFigures & { reused?: UsageFigures; carried?: UsageFigures };

/**
 * What one scorer said about one attempt. `value` is in [0, 1], or null when the scorer did not
 * score: then `skipped` says why (an unsupported EvalPort grader type), or `error` what it threw,
 * and metrics leave it out of that scorer's figures. Each scorer's score stands on its own: one
 * that threw makes only its own score an error.
 */
export interface Score {
  scorer: string;
  value: number | null;
  skipped?: string;
  /** The scorer threw (its message); `value` is null, and resume scores it again. */
  error?: string;
  answer?: string;
  explanation?: string;
  metadata?: Record<string, Json>;
}

export type AttemptErrorType = "timeout" | "provider" | "solver" | "scorer";

/**
 * What makes a provider error a configuration error rather than a sample's: the endpoint as
 * configured cannot serve any request. Nothing is listening (`connection-refused`), its host does
 * not resolve (`host-not-found`), or it answered a status that says the same to every request
 * (`http-status`: 401, 403, 404), or the base URL is not an http(s) URL at all (`invalid-url`, e.g.
 * an empty OPENAI_BASE_URL). Set by solvers; the engine stops an invocation whose first
 * samples all fail with the same one (see `engine/misconfiguration.ts`).
 */
export interface ConfigurationFault {
  cause: "connection-refused" | "host-not-found" | "http-status" | "invalid-url";
  /** The URL requested, user info redacted. */
  url: string;
  /** For `http-status`: the status. */
  status?: number;
}

export interface AttemptError {
  type: AttemptErrorType;
  message: string;
  /** For provider errors: the HTTP status of the last response, when there was one. */
  status?: number;
  /** For scorer errors: which scorer threw. */
  scorer?: string;
  /** For provider errors that no request to the endpoint would get past. */
  configuration?: ConfigurationFault;
}

/** Where an attempt came from: executed by a solver here, or restored from a file. */
export type Provenance = { kind: "executed" } | { kind: "imported"; source: string };

export type AttemptStatus = "scored" | "error";

/** An attempt as the engine hands it to the store; the store assigns `attempt`. */
export interface AttemptDraft extends Key {
  status: AttemptStatus;
  /** The solver's output: a string, or JSON. Null when the solver failed. */
  output: Json;
  scores: Score[];
  usage: Usage | null;
  transcript: Json;
  error: AttemptError | null;
  startedAt: string;
  completedAt: string;
  durationMs: number;
  /** The fingerprint of the sample this attempt executed. */
  fingerprint: string;
  provenance: Provenance;
  /**
   * Model requests re-sent after a retryable failure (429, 5xx, a dropped connection, a timeout)
   * over every model call the attempt made now: the solver's, `ctx.chat`'s and its scorers' (a
   * judge's). A call replayed from the journal adds nothing. Absent when unknown: attempts stored
   * before stet counted retries, and imported results that did not say.
   */
  retries?: number;
  /**
   * Not stored: marks a draft that re-runs a key on purpose (`stet resume --rerun`). The key's
   * attempts numbered up to this one stand in history; the store accepts this draft although the
   * key has a scored attempt, unless one numbered after it exists (so a retried commit, or a
   * second re-run of the same request, is refused like any duplicate).
   */
  rerunAfter?: number;
  /**
   * The names (never the values) of known secrets that the solver's or scorers' results held,
   * e.g. `["OPENAI_API_KEY"]`, which were replaced with "[redacted]" before anything was written.
   * Absent when nothing was redacted.
   */
  redacted?: string[];
  /**
   * Present when one of the eval's per-sample `limits` ended the attempt: which one, its value and
   * what the attempt used. Such an attempt is scored on its output so far (status `scored`): a
   * finished key, which resume does not execute again unless asked (`--rerun-limited`).
   */
  limit?: AttemptLimit;
}

/** One stored execution of one key. Attempts are immutable and never deleted. */
export interface Attempt extends AttemptDraft {
  runId: string;
  /** 1-based, per key, in the order the store accepted them. */
  attempt: number;
}

/**
 * A scoring of a stored attempt made after the attempt was committed: by `stet rescore`, or by a
 * resume re-scoring a scorer error. A scoring adds a row; the attempt is never rewritten
 * (guarantee 2). `scores` is the attempt's whole set as of this scoring (those in `rescored` just
 * scored, the others carried over), so an attempt's current scores, status and error are its
 * latest scoring's, or its own while it has none.
 */
export interface ScoringDraft extends Key {
  /** The attempt scored (its `attempt` number). */
  attempt: number;
  /** The rescore pass (or resume) that made it; a killed rescore goes on with its pass's rest. */
  pass: string;
  /** `error` when a scorer threw (the output stays the attempt's). */
  status: AttemptStatus;
  scores: Score[];
  /** The scorers this scoring ran, in order; the other scores were carried over. */
  rescored: string[];
  /** What those scorers were (each one's `describe()`), by name. */
  scorerConfig: Record<string, Json>;
  /** A `scorer` error when `status` is `error`. */
  error: AttemptError | null;
  /** What the scoring itself cost (a judge's calls); spend of its own, never the attempt's. */
  usage: Usage | null;
  /**
   * Its scorers' model requests re-sent after retryable failures (as AttemptDraft's `retries`):
   * the scoring's own, never the attempt's. Absent on scorings stored before stet counted them.
   */
  retries?: number;
  scoredAt: string;
  durationMs: number;
  /** As for AttemptDraft: the names of the secrets replaced in what the scorers returned. */
  redacted?: string[];
}

/** A stored scoring: 1-based per attempt, in the order the store accepted them. */
export interface Scoring extends ScoringDraft {
  runId: string;
  scoring: number;
}

/** A rescore that has not finished: `stet rescore` with the same request goes on with it. */
export interface PendingRescore {
  pass: string;
  /** The scorers it runs (all of the eval's, or the `--scorer` ones). */
  scorers: string[];
  onlyErrors: boolean;
  startedAt: string;
}

export type RunStatus = "running" | "interrupted" | "completed" | "errored";

export type Reducer = "mean" | "max" | "min" | "mode" | `pass@${number}`;

/** The resolved configuration a run was started with; resume reuses it. Holds no secrets. */
export interface RunConfig {
  evalName: string;
  /** Absolute path of the eval file, when the run came from one. */
  evalPath?: string;
  /** Absolute path of the Results JSONL the run streams to (`--output`); resume goes on appending. */
  output?: string;
  model?: string;
  epochs: number;
  concurrency: number;
  timeoutMs?: number;
  retries: number;
  reducer: Reducer;
  limit?: number;
  /**
   * The spend cap on the run's total, USD (`--max-cost` or `maxCost` at start). A resume keeps
   * it unless its own `--max-cost` overrides it for that invocation.
   */
  maxCostUsd?: number;
  /** The eval's per-sample limits (part of the run's identity, so a resume keeps them). */
  limits?: SampleLimits;
  /** A description of the solver with secrets replaced by the names of their sources. */
  solver: Record<string, Json>;
  /** The scorers whose scores count in the metrics, in order (a rescore may change them). */
  scorers: string[];
  /** The rescore in progress, until it has scored every attempt it set out to. */
  rescore?: PendingRescore;
  /** What defines the run, compared on every resume (absent on runs created before it existed). */
  identity?: RunIdentity;
  /** Accepted changes of the run's eval, oldest first. */
  history?: RunHistoryEntry[];
  /** Executed by any number of workers over per-key leases (`stet run --distributed`). */
  distributed?: true;
  /**
   * The benchmark the run was started in (`stet run --model a --model b`): its id, shared by the
   * runs of that invocation, which `stet resume <id>` resumes together.
   */
  benchmark?: string;
  /** A run of a dataset with no eval module (`stet run --dataset`): what rebuilds its eval. */
  datasetEval?: DatasetEvalConfig;
  /** Started with `--reuse`: which run its reused keys came from, how many, and why not the rest. */
  reuse?: RecordedReuse;
  /**
   * The stamp of the dataset file the snapshot was read from (see `datasetStamp`): a resume
   * that finds the file's stamp unchanged knows every sample current without reading it. Dropped
   * when a resume replaces samples of the snapshot (`--rerun-changed`).
   */
  datasetStamp?: string;
}

/** `stet run --dataset f --model m --scorer s [--system …]`: an eval with no module. */
export interface DatasetEvalConfig {
  /** Absolute path of the JSONL, JSON or CSV dataset. */
  dataset: string;
  model: string;
  /** Built-in scorers by name, in order. */
  scorers: string[];
  system?: string;
}

/**
 * A key asked to re-run (`--rerun`, `--rerun-failed`, `--rerun-limited`) with the number of the
 * key's last attempt at the time: such a key is pending until a scored attempt numbered after it
 * is stored, so a killed re-run is finished by the next resume and a finished one never repeats.
 * A run's requests are kept beside it, one a key (`reads.rerunPages`), not in its config.
 */
export interface RerunRequest extends Key {
  after: number;
}

/**
 * Re-run requests asked of a run's stored outcomes (a resume's `--rerun-failed`,
 * `--rerun-limited`): every key whose outcome scored below 1 on some scorer (`failed`), or that a
 * per-sample limit ended (`limited`), each after the key's last attempt. The store resolves them
 * from the run's figures, so whoever asks them holds none.
 */
export interface OutcomeAsk {
  failed: boolean;
  limited: boolean;
}

/**
 * What a claim records of a run's re-run requests (`runs.updateConfig`): a list replaces the
 * recorded ones; `asked` keeps those not done, then adds `added` and the keys `outcomes` names,
 * each replacing the recorded request of its key.
 */
export type RerunRecord =
  readonly RerunRequest[] | { asked: true; added: readonly RerunRequest[]; outcomes: OutcomeAsk };

/** A scorer as a run records it: its name and configuration (or a hash of its source). */
export interface ScorerIdentity {
  name: string;
  config: Record<string, Json>;
}

/**
 * What defines a run: the eval's name, the solver's resolved description, the scorers' names and
 * configuration, the epochs the eval declares, and the sha256 of the eval file's bytes.
 */
export interface RunIdentity {
  evalName: string;
  solver: Record<string, Json>;
  scorers: ScorerIdentity[];
  epochs: number;
  /** sha256 (hex) of the eval file's bytes, when the run came from a file. */
  evalFileSha256?: string;
  /** The eval's per-sample limits; absent when it has none (and on runs recorded before them). */
  limits?: SampleLimits;
}

/** One field of a run's identity that differs: the recorded value and the one given now. */
export interface IdentityDifference {
  field: string;
  recorded: Json;
  current: Json;
}

/**
 * A change of what defines the run: an accepted change of its eval (`--allow-eval-change`, or
 * only the file's bytes), or a rescore that changed its scorers.
 */
export interface RunHistoryEntry {
  at: string;
  change: "eval-changed" | "rescored";
  differences: IdentityDifference[];
}

/** Who is executing a run. `token` changes on every claim and fences late writers. */
export interface OwnerIdentity {
  host: string;
  pid: number;
  token: string;
}

export interface Owner extends OwnerIdentity {
  heartbeatAt: string;
  /**
   * Age of the heartbeat by the store's clock, in milliseconds; negative when the heartbeat was
   * stamped ahead of that clock (it, or the owner's, moved back).
   */
  heartbeatAgeMs: number;
}

export interface Run {
  id: string;
  evalName: string;
  status: RunStatus;
  config: RunConfig;
  /** Number of samples in the run's snapshot; keys = samples × epochs. */
  sampleCount: number;
  createdAt: string;
  updatedAt: string;
  owner: Owner | null;
  note: string | null;
  /** The run's labels (`--label`, git, CI), keys sorted; empty for none. */
  labels: RunLabels;
}
