import type { Json } from "./json.js";

/**
 * Batch execution (`--batch`, an eval's `batch`): how keys whose solver is a single model call
 * go through a provider's batch API. The engine collects the calls (`BatchChannel`), records a
 * submission before creating it, and gives each call the provider's answer; a provider's batch
 * protocol is a `BatchClient` (the solver hands one over with its call).
 */
export interface BatchOptions {
  /** Requests per provider batch at most. Default 10 000. */
  maxRequests?: number;
  /** Seconds between two looks at a running batch. Default 30. */
  pollSeconds?: number;
  /** The completion window asked for. Default "24h" (the only one OpenAI and Anthropic offer). */
  window?: string;
}

/** The options with their defaults filled in. */
export function batchSettings(options: BatchOptions | true): Required<BatchOptions> {
  const given = options === true ? {} : options;
  return {
    maxRequests: given.maxRequests ?? 10_000,
    pollSeconds: given.pollSeconds ?? 30,
    window: given.window ?? "24h",
  };
}

/** One request of a batch: its id in the batch and the body the provider's endpoint takes. */
export interface BatchLine {
  customId: string;
  body: Record<string, Json>;
}

/** What became of one request of a batch. */
export type BatchResult =
  /** The provider's 2xx body, as text (the provider's chat reply parses it). */
  | { kind: "succeeded"; body: string }
  /** The request failed inside the batch: the key's error (retried as errors are). */
  | { kind: "errored"; message: string; status?: number | undefined }
  /** Not executed: the window expired or the batch was cancelled; it goes in a new batch. */
  | { kind: "expired" }
  | { kind: "cancelled" };

/** A look at a batch: running, ended (results to download), or failed as a whole. */
export type BatchLook =
  | { status: "running"; total: number; done: number }
  | { status: "ended"; total: number; done: number }
  | { status: "failed"; reason: string };

/** A provider's batch protocol at one endpoint (OpenAI's files and batches, Anthropic's Message Batches). */
export interface BatchClient {
  /** The provider's name ("openai", "anthropic"). */
  readonly provider: string;
  /** The endpoint without credentials: calls to one endpoint and credential go in one batch. */
  readonly endpoint: string;
  /** What tells two credentials apart (hashed by the caller; never stored). */
  readonly group: string;
  /** Creates a batch of `lines` that carries `nonce`; its id. */
  create(nonce: string, lines: readonly BatchLine[], window: string): Promise<string>;
  /**
   * The batch that carries `nonce`, when the provider created one (a kill lost its id):
   * `"pending"` when a batch that may be it cannot be told yet (it has not ended).
   */
  find(nonce: string, since: string): Promise<string | "pending" | undefined>;
  look(batchId: string): Promise<BatchLook>;
  /** The results of an ended batch, by custom id. */
  results(batchId: string): Promise<Map<string, BatchResult>>;
  cancel(batchId: string): Promise<void>;
}

/** One model call handed to the engine's batches: the client of its provider and the body. */
export interface BatchCall {
  client: BatchClient;
  body: Record<string, Json>;
}

/**
 * A key's way into the run's batches (`ctx.batch`): the call waits for its batch to end and
 * resolves with the request's result (succeeded or errored; an expired one is submitted again).
 */
export interface BatchChannel {
  send(
    call: BatchCall,
    signal: AbortSignal,
  ): Promise<BatchResult & { kind: "succeeded" | "errored" }>;
}

/** The nonce of a submission: recorded before the batch is created, carried by the batch. */
export function customIdOf(nonce: string, index: number): string {
  return `${nonce}-${index}`;
}

/** One provider batch of a run as listings show it (never a credential: the endpoint is redacted). */
export interface BatchSummary {
  nonce: string;
  /** The provider's id, null until stet knew it (a kill before its create answered). */
  batchId: string | null;
  provider: string;
  endpoint: string;
  /** recorded, submitted, ended, failed, cancelled or abandoned (see `SubmissionStatus`). */
  status: string;
  /** Requests in it. */
  requests: number;
  createdAt: string;
  updatedAt: string;
  /** Milliseconds since it was recorded, when the summary was made. */
  ageMs: number;
  note?: string;
}

/** A run's provider batches: how many a resume would collect (`waiting`), of how many. */
export interface RunBatches {
  waiting: number;
  total: number;
  /** Waiting on them: requests in the open batches. */
  waitingRequests: number;
  batches: BatchSummary[];
}

/** Whether a submission's batch is still open at the provider (or not yet found there). */
export function isOpenBatch(status: string): boolean {
  return status === "recorded" || status === "submitted";
}

/**
 * A run's recorded submissions as listings show them, each with its age at `now`; undefined for a
 * run that never batched.
 *
 * @example summarizeBatches(submissions, Date.now())?.waiting // 1
 */
export function summarizeBatches(
  submissions: readonly {
    nonce: string;
    batchId: string | null;
    provider: string;
    endpoint: string;
    status: string;
    keys: readonly unknown[];
    createdAt: string;
    updatedAt: string;
    note: string | null;
  }[],
  now: number,
): RunBatches | undefined {
  if (submissions.length === 0) return undefined;
  const batches = submissions.map((s): BatchSummary => ({
    nonce: s.nonce,
    batchId: s.batchId,
    provider: s.provider,
    endpoint: s.endpoint,
    status: s.status,
    requests: s.keys.length,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    ageMs: Math.max(0, now - Date.parse(s.createdAt)),
    ...(s.note === null ? {} : { note: s.note }),
  }));
  const open = batches.filter((b) => isOpenBatch(b.status));
  return {
    waiting: open.length,
    total: batches.length,
    waitingRequests: open.reduce((n, b) => n + b.requests, 0),
    batches,
  };
}
