/**
 * The API's JSON contract: what every `/api` route and event stream sends, declared once. The
 * server's views are typed against it and the web UI reads it, so renaming a field here breaks
 * the build of whichever side still uses the old name. Types only: nothing here exists at run
 * time, so the UI's bundle pulls in no server or core code through it.
 */
import type { ScorerMetrics, UsageTotal } from "../core/aggregate.js";
import type { Agreement } from "../core/agreement.js";
import type { Review } from "../core/reviews.js";
import type { PlanSummary, Progress, RunReport } from "../core/events.js";
import type { Json } from "../core/json.js";
import type { ErrorGroup, RetryTotals } from "../core/outcome-fold.js";
import type { ScoreDistribution } from "../core/score-chart.js";
import type {
  Attempt,
  AttemptError,
  AttemptErrorType,
  AttemptStatus,
  RunConfig,
  RunStatus,
  Sample,
  Scoring,
  Usage,
} from "../core/types.js";
import type { LimitName } from "../core/limits.js";
import type { RateWaits } from "../core/rate-limits.js";
import type { RunBatches } from "../core/batch.js";

export type { ScorerMetrics as Metric, UsageTotal };

/** Key counts of a run: `done` keys have a scored outcome. */
export interface CountsView {
  total: number;
  done: number;
  errored: number;
  remaining: number;
  /**
   * Of `done`, the keys a per-sample limit ended (scored on their output so far), by limit. In a
   * run's detail; absent from listings.
   */
  limited?: number;
  limitedBy?: Partial<Record<LimitName, number>>;
}

/** A run's owner with its liveness; never its fencing token. */
export interface OwnerView {
  host: string;
  pid: number;
  heartbeatAt: string;
  heartbeatAgeMs: number;
  alive: boolean;
  reason: string;
}

/** A run as listings show it. */
export interface RunSummaryView {
  id: string;
  evalName: string;
  /** The benchmark the run belongs to: its eval's name. */
  benchmark: string;
  status: RunStatus;
  model: string | null;
  note: string | null;
  createdAt: string;
  updatedAt: string;
  owner: OwnerView | null;
  /** Stored as running, but its owner is dead: shown as interrupted (owner.reason says why). */
  orphaned: boolean;
  /** Executed by workers over per-key leases: no owner while it runs. */
  distributed: boolean;
  /** Distributed runs: workers executing it now (0 unless running), when they were counted. */
  activeWorkers?: number;
  counts: CountsView;
  /** The run's labels (`--label`, git, CI; `labels` of POST /api/runs), keys sorted. */
  labels: Record<string, string>;
  /**
   * A run executed with `batch`: its provider batches, how many it waits on (a run left by
   * `stet run --detach` waits with no owner until a resume collects them), each one's age and
   * requests. Absent for a run that never batched.
   */
  batches?: RunBatches;
}

/** A run as GET /api/runs and GET /api/benchmarks/:id list it: with its metrics and spend. */
export interface RunListedView extends RunSummaryView {
  metrics: ScorerMetrics[];
  cost: { spent: UsageTotal };
}

/** GET /api/runs. */
export interface RunsPageView {
  runs: RunListedView[];
  limit: number;
  offset: number;
  nextOffset: number | null;
}

/** A worker of a distributed run (never its token: `id` is derived from it). */
export interface WorkerView {
  id: string;
  host: string;
  pid: number;
  concurrency: number;
  leaseMs: number;
  startedAt: string;
  heartbeatAt: string;
  heartbeatAgeMs: number;
  keysDone: number;
  rejected: number;
  state: "active" | "finished" | "stopped" | "lost";
  /** Active, but silent for longer than its lease. */
  leaseExpired: boolean;
}

/** GET /api/runs/:id: one run in full, computed from its stored attempts. */
export interface RunDetailView extends RunSummaryView {
  /** Distributed runs only: every worker that joined, in the order they joined. */
  workers?: WorkerView[];
  /** The run's configuration with its secrets redacted. */
  config: RunConfig;
  plan: PlanSummary;
  /** The run's scorers, then its human scorers (`human`, `human:<rubric>`) when it has reviews. */
  metrics: ScorerMetrics[];
  /** Each human scorer against each scorer of the run: rate, Cohen's κ and interval, matrix. */
  agreement?: Agreement[];
  /** Per scorer, the samples' reduced values counted in tenths of [0, 1]. */
  distribution: ScoreDistribution[];
  errorsByType: Partial<Record<AttemptErrorType, number>>;
  /** Errored outcomes by type, with the first few keys and their messages. */
  errors: ErrorGroup[];
  cost: { spent: UsageTotal; reused: UsageTotal };
  /**
   * Model requests re-sent after retryable failures over every stored attempt and scoring, keys
   * that needed more than one attempt, and attempts stored before retries were counted.
   */
  retries: RetryTotals;
  /**
   * Per endpoint (and API key, by its keyed hash) of the run's model calls: requests sent, those
   * that waited on a rate limit (`throttled`), 429/529s received (`rejected`), the time requests
   * spent waiting (`waitMs`, summed over requests) and the requests waiting now (`waiting`, as
   * the run's processes recorded it in the last few seconds). Absent: no model call was paced.
   */
  rateLimits?: RateWaits[];
}

/** An attempt as the store's feed of commits gives it: without its output and transcript. */
export type AttemptHeadView = Omit<Attempt, "runId" | "transcript" | "output">;

/** An attempt as listed and streamed by its executor: everything but its (large) transcript. */
export type AttemptSummaryView = AttemptHeadView & { output: Attempt["output"] };

/** A later scoring of an attempt (a rescore, a scorer error scored again). */
export type ScoringView = Omit<Scoring, "runId" | "sampleId" | "epoch" | "attempt">;

/** One step of an attempt's journal (ctx.step / ctx.chat): its trajectory. */
export interface JournalStepView {
  step: number;
  kind: "step" | "chat";
  name: string;
  input: Json;
  result: Json;
  error?: { message: string; type?: string; status?: number };
  usage?: Usage;
  recordedAt: string;
  durationMs: number;
  /** Names of the secrets replaced in the step before it was stored. */
  redacted?: string[];
}

/** An attempt as GET /api/runs/:id/samples/:sampleId shows it: all of it, its history too. */
export interface AttemptView extends Omit<Attempt, "runId"> {
  /** An attempt of an earlier version of the sample: history, not the outcome. */
  stale: boolean;
  /** Later scorings of the attempt, oldest first. */
  scorings: ScoringView[];
  /** The attempt's step journal, in step order. */
  journal: JournalStepView[];
}

/** One key of a run in GET /api/runs/:id/samples. */
export interface SampleRowView {
  sampleId: string;
  epoch: number;
  /** The sample's fingerprint in the run's snapshot. */
  fingerprint: string;
  status: "scored" | "error" | "pending";
  attempts: number;
  input: Json;
  target: Json | null;
  metadata: Record<string, Json> | null;
  outcome: AttemptSummaryView | null;
}

/** GET /api/runs/:id/samples. */
export interface SamplePageView {
  total: number;
  limit: number;
  offset: number;
  samples: SampleRowView[];
}

/** GET /api/runs/:id/samples/:sampleId. */
export interface SampleDetailView {
  sample: Sample;
  fingerprint: string;
  epochs: { epoch: number; status: SampleRowView["status"]; outcomeAttempt: number | null }[];
  attempts: AttemptView[];
}

/** GET /api/benchmarks: one per eval with runs. */
export interface BenchmarksView {
  benchmarks: {
    id: string;
    evalName: string;
    runs: number;
    running: number;
    lastCreatedAt: string;
  }[];
}

/** One run's result on one sample of a benchmark, its scores reduced over epochs. */
export interface BenchmarkCellView {
  fingerprint: string;
  scored: number;
  errored: number;
  epochs: number;
  scores: Record<string, number | null>;
}

/** GET /api/benchmarks/:id: the eval's runs compared, per run and per sample. */
export interface BenchmarkView {
  id: string;
  evalName: string;
  scorers: string[];
  runs: RunListedView[];
  samples: {
    total: number;
    limit: number;
    offset: number;
    entries: {
      sampleId: string;
      input: Json;
      target: Json | null;
      /** The runs saw different content under this id (the dataset changed between them). */
      differs: boolean;
      /** By run id: null when the run has no such sample. */
      runs: Record<string, BenchmarkCellView | null>;
    }[];
  };
}

/** One scorer common to both runs of a diff, compared over the samples both scored. */
export interface ScorerDiffView {
  scorer: string;
  paired: number;
  unpaired: number;
  meanA: number | null;
  meanB: number | null;
  delta: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  pValue: number;
  test: string;
  significantRegression: boolean;
  improved: number;
  regressed: number;
  unchanged: number;
  regressedIds: string[];
}

/** GET /api/diff?a=&b=: two runs compared sample by sample (`stet diff --json`). */
export interface RunDiffView {
  runA: string;
  runB: string;
  evalA: string;
  evalB: string;
  scorers: ScorerDiffView[];
  onlyInA: string[];
  onlyInB: string[];
  changed: string[];
}

/** GET /api/evals: the evals this server can start, and the files it could not register. */
export interface EvalsView {
  evals: { name: string; path: string }[];
  problems: { file: string; message: string }[];
}

/**
 * `progress` of GET /api/runs/:id/events: the run's status and key counts, and the requests
 * waiting on a rate limit now (`rateWaiting`, summed over endpoints; absent: none), sent again
 * whenever either changes.
 */
export interface FollowProgressView extends CountsView {
  rateWaiting?: number;
  status: RunStatus;
}

/** `completed` of GET /api/runs/:id/events: the run is no longer running (or its owner died). */
export interface FollowCompletedView extends CountsView {
  status: RunStatus;
  note: string | null;
  orphaned?: boolean;
  reason?: string;
}

/** The events of GET /api/runs/:id/events (a run followed through the store), by name. */
export interface FollowEvents {
  progress: FollowProgressView;
  sample: AttemptHeadView;
  completed: FollowCompletedView;
}

/** `progress` of a run this server executes: the invocation's progress with what remains. */
export type ExecutionProgressView = Progress & { remaining: number };

/**
 * The events of a run this server executes (POST /api/runs, /resume, /rescore), by name:
 * `started` first, then `sample`/`scoring` with `progress`, and `completed` or `error` last.
 */
export interface ExecutionEvents {
  started: {
    runId: string;
    evalName: string;
    resumed: boolean;
    total: number;
    preserved: number;
    remaining: number;
    plan: PlanSummary;
  };
  sample: AttemptSummaryView;
  scoring: Omit<Scoring, "runId">;
  progress: ExecutionProgressView;
  "store-retry": { failures: number; retryInMs: number };
  stopping: { reason: string; inflight: number; note?: string };
  warning: { code: string; message: string };
  completed: RunReport;
  error: { code: string; message: string };
}

/** An SSE message of one of the event maps above: its name and its payload. */
export type EventMessage<Events> = {
  [Name in keyof Events & string]: { event: Name; data: Events[Name] };
}[keyof Events & string];

export type { AttemptError, AttemptStatus };

/** A person's review of an attempt, and whether it counts now (its reviewer's latest, current attempt). */
export type ReviewView = Review & { current: boolean };

/** GET and POST /api/runs/:id/reviews. */
export interface ReviewsView {
  runId: string;
  reviews: ReviewView[];
}
