import type { BatchOptions } from "../core/batch.js";
import type { Reducer } from "../core/types.js";
import type { SampleLimits } from "../core/limits.js";
import type { JournalKeep, ScorerLike, SolverFn } from "../core/eval.js";
import type { SandboxConfig } from "../sandbox/index.js";
import type { DatasetRow, DatasetSource, SampleInput } from "../dataset/types.js";

export type { DatasetRow, DatasetSource, SampleInput };

/** What `defineEval` accepts. */
export interface EvalDefinition<Row = DatasetRow> {
  name: string;
  /** A path (JSONL, JSON array or CSV; relative paths resolve against the eval file), an array, or an (async) iterable. */
  dataset: DatasetSource<Row>;
  /** Maps a row whose columns are not `{ id?, input, target?, metadata? }`. */
  sample?(row: Row): SampleInput;
  solver: SolverFn;
  scorers: ScorerLike[];
  epochs?: number;
  reducer?: Reducer;
  concurrency?: number;
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Extra attempts for a key whose attempt ended in error, within one invocation. */
  retries?: number;
  /**
   * A cap on what the run may spend in total, in US dollars (`--max-cost` overrides it): at the
   * cap stet stops dispatching and the run is interrupted, resumable with a higher cap.
   */
  maxCost?: number;
  /**
   * Per-sample limits: a sample that reaches one ends as *limited*, scored on its output so far
   * (see docs/limits.md). Part of the run's identity.
   */
  limits?: SampleLimits;
  /**
   * Reuse an earlier run's outcomes (`--reuse` overrides it): a run id, or `"latest"`, the newest
   * run of this eval whose identity matches. See docs/reuse.md.
   */
  reuse?: string;
  /**
   * False: `ctx.step` and `ctx.chat` are not journaled, and a resumed sample starts again from
   * scratch (default true: a killed sample resumes mid-trajectory). `{ keep }` journals and sets
   * what finished attempts keep once a run or resume ends: `"all"` (default) their trajectories,
   * `"failed"` only those of attempts that ended in error, `"open"` none.
   */
  journal?: boolean | { keep?: JournalKeep };
  /**
   * Where programs of `scorers.code` (and EvalPort `code` graders) run. Default bubblewrap,
   * checked before the run starts: unavailable, the run refuses with what to install. Running
   * unsandboxed needs `{ kind: "none" }`.
   */
  sandbox?: SandboxConfig;
  /**
   * The reply cache of model calls (`--cache`/`--no-cache` override it): a call made before with
   * the same endpoint, credential, model, messages, tools and parameters (and, by default, in the
   * same epoch) gets the stored reply, counted as reused. `ttlDays`: entries older are not
   * served; `perEpoch: false`: one reply serves every epoch. Default off.
   */
  cache?: boolean | { ttlDays?: number; perEpoch?: boolean };
  /**
   * Rate limits per endpoint, keyed by `provider:model` (`"openai:gpt-4o-mini"`), a bare model id
   * or a base URL: requests (`rpm`) and tokens (`tpm`) per minute, as the provider measures them
   * over `windowMs` (default a minute). Every run and worker on the store shares each budget;
   * endpoints without one are paced by their rate-limit headers and 429s. See docs/rate-limits.md.
   */
  rateLimits?: Record<string, { rpm?: number; tpm?: number; windowMs?: number }>;
  /**
   * Send the solver's model calls through the provider's batch API (`--batch` turns it on too):
   * half the price, results within the window. Only for a solver that makes one model call per
   * turn (`solvers.chat`, EvalPort suites); see docs/batch.md. Default off.
   */
  batch?: boolean | BatchOptions;
}

/** `defineEval`'s result: the definition, validated and branded so any copy of stet accepts it. */
export type Eval<Row = DatasetRow> = Readonly<EvalDefinition<Row>> & {
  readonly [EVAL_BRAND]: true;
};

/** A registry-wide symbol, so an eval defined with the user's copy of stet is recognised by ours. */
export const EVAL_BRAND: unique symbol = Symbol.for("stet.eval");
