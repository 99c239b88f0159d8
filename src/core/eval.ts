import type { Json } from "./json.js";
import type { Reducer, Sample, Score, Usage } from "./types.js";

/** What a solver receives besides the sample. */
export interface SolverContext {
  runId: string;
  epoch: number;
  /** Aborted on timeout, on a second Ctrl-C, or when the run loses its owner. */
  signal: AbortSignal;
  /** The run's model override (`--model`), if any; model-calling solvers prefer it. */
  model?: string;
}

/** A solver's full answer. A bare string or JSON value is shorthand for `{ output }`. */
export interface SolverResult {
  output: Json;
  usage?: Usage;
  transcript?: Json;
}

export type SolverReturn = SolverResult | Json;

export interface SolverFn {
  (sample: Sample, ctx: SolverContext): Promise<SolverReturn> | SolverReturn;
  /** A description recorded in the run's config. Never holds secrets. */
  describe?: () => Record<string, Json>;
}

/**
 * What a scorer may return: a number in [0, 1], a boolean, a value with details, or a skip
 * (`{ value: null, skipped: "unsupported_grader_type" }`) that metrics leave out.
 */
export type ScoreValue =
  | number
  | boolean
  | { value: null; skipped: string; explanation?: string; metadata?: Record<string, Json> }
  | {
      value: number | boolean;
      answer?: string;
      explanation?: string;
      metadata?: Record<string, Json>;
    };

export interface ScorerArgs {
  sample: Sample;
  output: Json;
  ctx: SolverContext;
}

export interface Scorer {
  name: string;
  score: (args: ScorerArgs) => Promise<ScoreValue> | ScoreValue;
}

/** A plain function is accepted as a scorer and named after the function. */
export type ScorerLike = Scorer | ((args: ScorerArgs) => Promise<ScoreValue> | ScoreValue);

export type { Score, Reducer };
