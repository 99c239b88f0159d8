import type { RateGate, RateLimits } from "./rate-limits.js";
import type { Secret } from "./secrets.js";
import type { BatchChannel, BatchOptions } from "./batch.js";
import type { Json } from "./json.js";
import type { SampleLimits } from "./limits.js";
import type { LanguageModelCallOptions, LanguageModelLike } from "./language-model.js";
import type {
  ModelMessage,
  ModelTool,
  ProviderName,
  ReplyParts,
  ToolChoice,
} from "./model-types.js";
import type { Trajectory } from "./trajectory.js";
import type { Price, Reducer, Sample, SampleRecord, Score, Usage } from "./types.js";

/** What a solver (and a scorer) receives besides the sample. */
export interface SolverContext {
  runId: string;
  epoch: number;
  /** Aborted on timeout, on a second Ctrl-C, or when the run loses its owner. */
  signal: AbortSignal;
  /** The run's model override (`--model`), if any; model-calling solvers prefer it. */
  model?: string;
  /**
   * Calls an OpenAI-compatible chat model (as `solvers.chat` does: retries, Retry-After, this
   * attempt's signal). Its tokens and cost are added to the attempt's usage, so an agent that
   * calls the model several times records all of its spend; usage the solver returns itself is
   * added too, so return only usage of work done outside `ctx.chat`.
   *
   * @example const { content } = await ctx.chat({ messages: [{ role: "user", content: "2+2?" }] });
   */
  chat(call: ModelCall): Promise<ModelReply>;
  /**
   * Runs `fn` once and journals its JSON result (or what it threw) under `name` and a hash of
   * `input` before returning it. When a killed run is resumed, the sample's execution replays:
   * the n-th step whose name and input match the interrupted execution's n-th entry returns the
   * recorded result without calling `fn`; the first mismatch ends replay and `fn` runs from
   * there on. `ctx.chat` calls are journaled the same way. `{ journal: false }` runs `fn`
   * unjournaled (and takes no step number).
   *
   * `{ behind: true }` returns the result while its entry commits, for a result that only model
   * calls (`ctx.chat`) and the output see until the next `ctx.step`, as an agent's tool result
   * does: the next model call goes out during the commit instead of after it. The next step,
   * and the return of every `ctx.chat`, wait for the commit. Do not pass it when code acts on
   * the result outside the process (a file, a request) before the next step.
   *
   * @example const files = await ctx.step("ls", { dir }, () => listFiles(dir));
   */
  step<T>(
    name: string,
    input: Json,
    fn: () => Promise<T> | T,
    options?: { journal?: boolean; behind?: boolean },
  ): Promise<T>;
  /**
   * Journals one model call that the caller sends itself (`solvers.chat` does, with its own
   * endpoint options), as `ctx.chat` journals its calls: `input` is the request (model, messages,
   * parameters; never a key or headers); a resumed execution gets the recorded reply without
   * `send` being called. The caller accounts the usage of a reply sent now (`replayed: false`);
   * a replayed reply's usage was paid for by the interrupted execution and is reused. Absent
   * from a hand-made context: call the model directly then.
   *
   * `last: true` says the reply becomes the solver's output and nothing else acts on it: its
   * entry then commits ahead of the attempt without the solver waiting for it (a solver that
   * acts on a reply, in a sandbox or elsewhere, must not pass it).
   *
   * @example const { reply, usage } = await ctx.chatStep!(request, () => send(request));
   */
  chatStep?(
    input: Json,
    send: () => Promise<SentReply>,
    options?: {
      last?: boolean;
      target?: TargetOf | undefined;
      /**
       * False: the call is no step of the attempt's trajectory (a judge's): it is not journaled,
       * only served from, and stored in, the run's reply cache (`replayed`: served from it).
       */
      journal?: false;
    },
  ): Promise<{
    reply: ModelReply;
    replayed: boolean;
    /**
     * The call's usage as the attempt counts it (the reply's, or when replayed, marked reused or
     * carried): what a solver returns as its usage.
     */
    usage: Usage | undefined;
  }>;
  /**
   * Counts one model request re-sent after a retryable failure (429, 5xx, a dropped connection,
   * a timeout) toward this attempt's `retries`, or the scoring's when a rescore runs the scorer.
   * `ctx.chat` counts its own; a call made outside it passes this as `chatCompletion`'s `onRetry`
   * (`solvers.chat` and `scorers.modelGraded` do). Absent from a hand-made context.
   *
   * @example await chatCompletion({ model, messages, signal: ctx.signal, onRetry: ctx.onRetry });
   */
  onRetry?: () => void;
  /**
   * The run's rate limits (the eval's `rateLimits`, `--rpm`/`--tpm`, and what endpoints' headers
   * say): `ctx.chat`, `solvers.chat` and `scorers.modelGraded` pass it to each call, which then
   * waits for its endpoint's budget. A call made outside them passes it as `chatCompletion`'s
   * `rateGate`. Absent from a hand-made context.
   */
  rateGate?: RateGate;
  /**
   * An AI SDK language model wrapped for this attempt, for an agent written with the AI SDK's
   * own loop (`generateText({ model: ctx.languageModel(openai.chat("gpt-4o-mini")), tools })`):
   * every `doGenerate` (and `doStream`) call is journaled as a `ctx.chat` call is (a resumed
   * sample gets the recorded result without the model being called), retried by stet's policy
   * (429, 5xx; counted in `retries`), and its usage, priced by the model id or `prices`, added
   * to the attempt's usage and so to the spend cap. Returns a model of the same specification
   * version.
   *
   * @example const { text } = await generateText({ model: ctx.languageModel(openai.chat("gpt-4o-mini")), prompt });
   */
  languageModel<M extends LanguageModelLike>(model: M, options?: { prices?: Price }): M;
  /**
   * The run's provider batches (`--batch`): a batchable solver hands its model call over and
   * waits for the batch's result. Absent when the run does not batch.
   */
  batch?: BatchChannel;
}

/**
 * One model call through `ctx.chat`, in stet's canonical form (the provider maps it to its wire
 * format). Endpoint fields default as in `solvers.chat`.
 */
export interface ModelCall {
  /**
   * The model id; its `provider:` prefix picks the provider (`anthropic:claude-sonnet-4-5`;
   * `openai:` or none: the OpenAI-compatible format) and is dropped; or an AI SDK language model
   * (`openai.chat("gpt-4o-mini")`), called through its provider package. The run's `--model` wins.
   */
  model?: string | LanguageModelLike;
  /** The conversation (see ModelMessage: canonical or OpenAI-format messages). */
  messages: ModelMessage[];
  /** Prepended as a system message. */
  system?: string;
  /** Tools the model may call; its calls come back parsed in `toolCalls`. */
  tools?: ModelTool[];
  toolChoice?: ToolChoice;
  temperature?: number;
  maxTokens?: number;
  /** Extra request-body fields of the provider's format (seed, top_p, thinking, …). */
  params?: Record<string, Json>;
  /** The provider, when the model id's prefix does not say it. */
  provider?: ProviderName;
  baseURL?: string;
  apiKey?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  maxRetries?: number;
  /** USD per 1M tokens, by tier; overrides the built-in price table. */
  prices?: Price;
  /** False: this call is not journaled (a resumed sample makes it again). */
  journal?: boolean;
}

/**
 * A model's reply: its text, its tool calls (`{ id, name, arguments }`, arguments parsed), why it
 * stopped, its reasoning when returned, and `message`, the assistant message to append to the
 * conversation before the tool results.
 *
 * @example
 * const reply = await ctx.chat({ messages, tools });
 * messages.push(reply.message);
 * for (const call of reply.toolCalls) messages.push({ role: "tool", toolCallId: call.id, content: run(call) });
 */
export interface ModelReply extends ReplyParts {
  /** The model id sent to the endpoint. */
  model: string;
  /** Tokens, and cost when the model's price is known. */
  usage?: Usage;
}

/**
 * A reply as a model caller or a `chatStep` sender may give it: the canonical parts it lacks
 * (tool calls, finish reason, message) are filled in by the engine (see completeReply).
 */
export type SentReply = Omit<ModelReply, keyof ReplyParts> & {
  content: string;
} & Partial<ReplyParts>;

/**
 * Makes model calls for `ctx.chat`; the eval loader supplies the real one (solvers/model-call.ts),
 * with `languageModel`, what `ctx.languageModel`'s wrapped models call.
 */
export interface ModelCaller {
  (
    call: ModelCall,
    context: { signal: AbortSignal; model?: string; onRetry?: () => void; rateGate?: RateGate },
  ): Promise<SentReply>;
  languageModel?: LanguageModelGenerator;
  /**
   * The most a call may use, for the eval's per-sample `limits`: its prompt's tokens (estimated
   * from its text), `maxTokens` output tokens (0 when it sets none) and their cost at the model's
   * price (0 when unknown).
   */
  worstCase?: (call: ModelCall, model: string | undefined) => CallWorstCase;
  /**
   * Where a call would go and with what credential (undefined: not cacheable), see CallTarget;
   * an AI SDK model's is read from its provider package, so it may come later.
   */
  target?: (call: ModelCall, model: string | undefined) => TargetOf | undefined;
}

/** What one model call may use at most (ModelCaller.worstCase). */
export interface CallWorstCase {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/**
 * Where a model call goes and with what credential: what the reply cache keys a call by beside
 * its identity. `credential` (the key and header values) never leaves the process: the engine
 * keeps only a keyed hash of it (HMAC-SHA256 with the store's salt).
 */
export interface CallTarget {
  provider: string;
  baseURL: string;
  credential: string;
}

/**
 * A call's target as a caller has it: known, or still being read (an AI SDK model's provider
 * package may load its key asynchronously); a promise of undefined is a call not cached.
 */
export type TargetOf = CallTarget | Promise<CallTarget | undefined>;

/**
 * The reply cache of an eval (`cache`): a successful reply is stored keyed by the call (its
 * identity with the endpoint), the credential's keyed hash and, `perEpoch`, the epoch.
 */
export interface CachePolicy {
  /** False: one reply serves every epoch (default true: each epoch samples its own). */
  perEpoch: boolean;
  /** Entries older than this many days are not served. */
  ttlDays?: number;
}

/**
 * Calls an AI SDK model for `ctx.languageModel` (solvers/ai-sdk-model.ts): `doGenerate` or
 * `doStream` with stet's retries, the result as JSON (a stream: its parts) and its usage priced.
 */
export interface LanguageModelGenerator {
  generate(
    model: LanguageModelLike,
    options: LanguageModelCallOptions,
    context: LanguageModelCallContext,
  ): Promise<{ result: Json; usage?: Usage }>;
  stream(
    model: LanguageModelLike,
    options: LanguageModelCallOptions,
    context: LanguageModelCallContext,
  ): Promise<{ result: Json; usage?: Usage }>;
  /** Where the model's calls go and with what credential, for the reply cache (see TargetOf). */
  target?(model: LanguageModelLike): TargetOf;
}

/** What a wrapped model's call is told: the signal, the retry counter, the price, the rate limits. */
export interface LanguageModelCallContext {
  signal: AbortSignal;
  onRetry: () => void;
  prices?: Price | undefined;
  /** The run's rate limits (`ctx.rateGate`): the call waits for its endpoint's budget. */
  rateGate?: RateGate | undefined;
}

/** A solver's full answer. A bare string or JSON value is shorthand for `{ output }`. */
export interface SolverResult {
  output: Json;
  usage?: Usage;
  transcript?: Json;
  /**
   * Model requests the solver re-sent after retryable failures outside `ctx.chat` (which counts
   * its own): added to the attempt's `retries`.
   */
  retries?: number;
}

export type SolverReturn = SolverResult | Json;

export interface SolverFn {
  (sample: Sample, ctx: SolverContext): Promise<SolverReturn> | SolverReturn;
  /** A description recorded in the run's config. Never holds secrets. */
  describe?: () => Record<string, Json>;
  /** The credentials it sends (an explicit API key, header values): redacted wherever echoed. */
  secrets?: () => Secret[];
  /** False when the eval says `journal: false`: `ctx.step` and `ctx.chat` run unjournaled. */
  journal?: boolean;
  /**
   * What is wrong with a sample's `input` for this solver, naming the field (`input[1].role: …`),
   * or undefined when it takes it. The eval's load asks it of every sample, so a bad input is
   * refused before anything runs (the built-in model solvers have one).
   */
  checkInput?: (input: Json) => string | undefined;
  /**
   * True for a solver whose model calls can go through a provider's batch API (`--batch`): each
   * call waits for `ctx.batch`. `solvers.chat` is one; an agent is not (`--batch` refuses it).
   */
  batchable?: boolean;
}

/**
 * What a scorer may return: a number in [0, 1], a boolean, a value with details, or a skip
 * (`{ value: null, skipped: "unsupported_grader_type" }`) that metrics leave out.
 */
export type ScoreValue =
  | number
  | boolean
  | {
      value: null;
      skipped: string;
      explanation?: string;
      metadata?: Record<string, Json>;
      usage?: Usage;
    }
  | {
      value: number | boolean;
      answer?: string;
      explanation?: string;
      metadata?: Record<string, Json>;
      /**
       * What scoring cost (a judge's tokens and cost): added to the attempt's usage. A scorer
       * that fails after paying throws a `ScorerError` with its `usage`: it is spent all the same.
       */
      usage?: Usage;
    };

export interface ScorerArgs {
  sample: Sample;
  output: Json;
  ctx: SolverContext;
  /**
   * How the attempt reached its output: its model calls and tool steps, from its step journal
   * (see Trajectory; `known: false` with the reason when the journal is not there). Given by the
   * engine, right after the attempt and on `stet rescore`; absent in a hand-made call.
   */
  trajectory?: Trajectory;
}

export interface Scorer {
  name: string;
  score: (args: ScorerArgs) => Promise<ScoreValue> | ScoreValue;
  /** The credentials a judge sends, as for SolverFn.secrets. */
  secrets?: () => Secret[];
  /**
   * Its configuration, recorded in the run's identity so a resume notices a changed scorer, and
   * with every scoring it makes. Without it the run records a hash of `score`'s source. Never
   * holds secrets.
   */
  describe?: () => Record<string, Json>;
}

/** A plain function is accepted as a scorer and named after the function. */
export type ScorerLike = Scorer | ((args: ScorerArgs) => Promise<ScoreValue> | ScoreValue);

export type { Score, Reducer };
export type { LanguageModelLike } from "./language-model.js";
export type {
  Trajectory,
  TrajectoryEvent,
  TrajectoryModelCall,
  TrajectoryToolCall,
  TrajectoryToolStep,
} from "./trajectory.js";
export type {
  FinishReason,
  ModelMessage,
  ModelTool,
  ProviderName,
  ReplyTokens,
  ToolCall,
  ToolChoice,
} from "./model-types.js";

/**
 * An eval ready to execute: samples loaded, scorers normalised, defaults filled in (what
 * `resolveEval` returns and a run executes).
 */
export interface EngineEval {
  name: string;
  /** The dataset's samples, in dataset order; empty when they are read a page at a time (`pages`). */
  samples: readonly SampleRecord[];
  /**
   * A large dataset file left unread (`resolveEval`'s `paged`): a new run writes its snapshot
   * from these pages and executes from the snapshot, so no process holds the whole dataset.
   */
  pages?: PagedSamples;
  solver: SolverFn;
  scorers: readonly Scorer[];
  epochs: number;
  reducer: Reducer;
  concurrency: number;
  timeoutMs?: number;
  retries: number;
  /** The spend cap on the run's total, USD (`maxCost`, or `--max-cost` overriding it). */
  maxCost?: number;
  /** Per-sample limits: reaching one ends a sample as limited, scored on its output so far. */
  limits?: SampleLimits;
  /** What `ctx.chat` calls; without it `ctx.chat` fails the attempt (a solver error). */
  callModel?: ModelCaller;
  /** Which finished attempts keep their journal when an execution ends (default "all"). */
  journalKeep?: JournalKeep;
  /** The reply cache's policy (absent: no cache). */
  cache?: CachePolicy;
  /** Declared rate limits per endpoint (`rateLimits`, with `--rpm`/`--tpm`). */
  rateLimits?: RateLimits;
  /** Provider batches (`--batch`, the eval's `batch`; absent: every call is its own request). */
  batch?: Required<BatchOptions>;
  /**
   * The stamp of the dataset file its samples were read from (`datasetStamp`, when resolved with
   * `stamp: true`), recorded with a new run so a resume can tell the file unchanged unread.
   */
  datasetStamp?: string;
}

/** A dataset file read a page at a time, never held whole (see `EngineEval.pages`). */
export interface PagedSamples {
  /** The file's path. */
  file: string;
  /**
   * Its samples a page at a time, each checked as loading checks them (the rows, the solver's
   * input check; the file unchanged from start to end): what is wrong throws when met.
   */
  read(): AsyncIterable<SampleRecord[]>;
  /** All of them, loaded and checked as a dataset that is not paged is (a repeated id refused). */
  whole(): Promise<SampleRecord[]>;
  /** Where the `n`th sample (from 0) was read (`file:line`): what names a repeated id's rows. */
  whereOf(n: number): Promise<string>;
}

/**
 * The step journal's retention, applied when a run or resume ends: `"all"` keeps every finished
 * attempt's trajectory, `"failed"` only those of attempts that ended in error, `"open"` none
 * (only the entries of samples still in flight, which a resume replays, stay).
 */
export type JournalKeep = "all" | "failed" | "open";
