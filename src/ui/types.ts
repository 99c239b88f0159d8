/** The API's JSON as the UI reads it (the server's run-view.ts and routes define it). */
import type { ScoreDistribution } from "../core/score-chart.js";

export interface Counts {
  total: number;
  done: number;
  errored: number;
  remaining: number;
}

export interface OwnerView {
  host: string;
  pid: number;
  heartbeatAgeMs: number;
  alive: boolean;
  reason: string;
}

export interface RunSummary {
  id: string;
  evalName: string;
  status: string;
  model: string | null;
  note: string | null;
  createdAt: string;
  updatedAt: string;
  owner: OwnerView | null;
  /** Stored as running, but its owner is dead: shown as interrupted (owner.reason says why). */
  orphaned: boolean;
  /** Executed by workers over per-key leases: no owner while it runs. */
  distributed: boolean;
  /** Distributed runs in a listing: workers executing it now (0 unless running). */
  activeWorkers?: number;
  counts: Counts;
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

export interface Metric {
  scorer: string;
  mean: number | null;
  stderr: number | null;
  samples: number;
}

export interface UsageTotal {
  attempts: number;
  inputTokens: number;
  outputTokens: number;
  /** Null when unknown: attempts used tokens without a known price and none was priced. */
  costUsd: number | null;
  /** Attempts that used tokens without a known price; with a number, `costUsd` is a lower bound. */
  unpriced: number;
}

/** A run as GET /api/runs lists it: with its metrics and what it spent. */
export interface RunListed extends RunSummary {
  metrics: Metric[];
  cost: { spent: UsageTotal };
}

export interface RunDetail extends RunSummary {
  config: { scorers: string[]; epochs: number; concurrency: number } & Record<string, unknown>;
  metrics: Metric[];
  /** Per scorer, the samples' reduced values counted in tenths of [0, 1]. */
  distribution: ScoreDistribution[];
  errorsByType: Record<string, number>;
  /** Errored outcomes by type, with the first few keys and their messages. */
  errors: {
    type: string;
    count: number;
    examples: { sampleId: string; epoch: number; message: string }[];
  }[];
  cost: { spent: UsageTotal; reused: UsageTotal };
  /**
   * Model requests re-sent after retryable failures over every stored attempt and scoring, keys
   * that needed more than one attempt, and attempts stored before retries were counted.
   */
  retries: { total: number; keysRetried: number; unrecorded: number };
  /** Distributed runs only: every worker that joined, in the order they joined. */
  workers?: WorkerView[];
}

export interface Score {
  scorer: string;
  value: number | null;
  answer?: string;
  explanation?: string;
}

export interface AttemptView {
  sampleId: string;
  epoch: number;
  attempt: number;
  status: "scored" | "error";
  output: unknown;
  scores: Score[];
  usage: { inputTokens: number; outputTokens: number; costUsd?: number } | null;
  error: { type: string; message: string } | null;
  startedAt: string;
  completedAt: string;
  durationMs: number;
  transcript?: unknown;
  stale?: boolean;
  provenance: { kind: string; source?: string };
  /** Names of the secrets replaced in this attempt before it was stored. */
  redacted?: string[];
  /** Model requests it re-sent after retryable failures; absent when unknown (an old attempt). */
  retries?: number;
  /** Later scorings of the attempt (a rescore, a scorer error scored again), oldest first. */
  scorings?: ScoringView[];
  /** The attempt's step journal (ctx.step / ctx.chat), in step order: its trajectory. */
  journal?: JournalStepView[];
}

export interface ScoringView {
  scoring: number;
  status: "scored" | "error";
  scores: Score[];
  /** The scorers this scoring ran; the others' scores were carried over. */
  rescored: string[];
  error: { type: string; message: string } | null;
  usage: { inputTokens: number; outputTokens: number; costUsd?: number } | null;
  /** Its judges' re-sent model requests; absent when unknown. */
  retries?: number;
  scoredAt: string;
}

export interface JournalStepView {
  step: number;
  kind: "step" | "chat";
  name: string;
  input: unknown;
  result: unknown;
  error?: { message: string; type?: string; status?: number };
  usage?: { inputTokens: number; outputTokens: number; costUsd?: number };
  recordedAt: string;
  durationMs: number;
}

export interface SampleRow {
  sampleId: string;
  epoch: number;
  status: "scored" | "error" | "pending";
  attempts: number;
  input: unknown;
  target: unknown;
  outcome: AttemptView | null;
}

export interface SamplePage {
  total: number;
  limit: number;
  offset: number;
  samples: SampleRow[];
}

export interface SampleDetail {
  sample: { id: string; input: unknown; target?: unknown; metadata?: unknown };
  epochs: { epoch: number; status: string; outcomeAttempt: number | null }[];
  attempts: AttemptView[];
}

export interface BenchmarkView {
  evalName: string;
  scorers: string[];
  runs: (RunSummary & { metrics: Metric[]; cost: { spent: UsageTotal } })[];
  samples: {
    total: number;
    limit: number;
    offset: number;
    entries: {
      sampleId: string;
      input: unknown;
      differs: boolean;
      runs: Record<string, { scores: Record<string, number | null>; errored: number } | null>;
    }[];
  };
}

/** GET /api/diff?a=&b=: two runs compared sample by sample (`stet diff --json`). */
export interface RunDiffView {
  runA: string;
  runB: string;
  evalA: string;
  evalB: string;
  scorers: {
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
  }[];
  onlyInA: string[];
  onlyInB: string[];
  changed: string[];
}
