import * as z from "zod";

/**
 * A per-sample budget (the eval's `limits`): crossing one ends the sample as a *limited* outcome,
 * scored on what it produced so far. `tokens` counts input and output tokens of the attempt's
 * model calls, `outputTokens` output tokens only, `costUsd` their cost, `turns` the model calls,
 * `wallMs` the attempt's wall time. Replayed journal calls count: they are the attempt's
 * trajectory.
 */
export interface SampleLimits {
  tokens?: number;
  outputTokens?: number;
  costUsd?: number;
  turns?: number;
  wallMs?: number;
}

export type LimitName = keyof SampleLimits;

/** The limits in the order they are checked (and named in messages). */
export const LIMIT_NAMES: readonly LimitName[] = [
  "turns",
  "tokens",
  "outputTokens",
  "costUsd",
  "wallMs",
];

/** Which limit ended an attempt: its name, the limit's value and what the attempt had used. */
export interface AttemptLimit {
  limit: LimitName;
  value: number;
  /** What the attempt had used of it when it ended (tokens, USD, model calls or ms). */
  used: number;
}

const count = z.number().int().positive().max(1e12);

export const sampleLimitsSchema = z.strictObject({
  tokens: count.optional(),
  outputTokens: count.optional(),
  costUsd: z.number().positive().max(1e9).optional(),
  turns: count.optional(),
  wallMs: z.number().int().positive().max(86_400_000).optional(),
});

export const attemptLimitSchema = z.object({
  limit: z.enum(["tokens", "outputTokens", "costUsd", "turns", "wallMs"]),
  value: z.number(),
  used: z.number(),
});

/**
 * Thrown by `ctx.chat`, `ctx.step` and an AI SDK model wrapped by `ctx.languageModel` when the
 * attempt reached one of the eval's limits (the call or step is not made). A solver that catches
 * it returns its output so far, which is scored; one that does not is scored on an empty output.
 * Also the reason of `ctx.signal` when the `wallMs` limit ends the attempt.
 */
export class LimitReached extends Error {
  override readonly name = "LimitReached";
  readonly reached: AttemptLimit;

  constructor(reached: AttemptLimit) {
    super(`the sample reached its ${reached.limit} limit (${reached.value}; used ${reached.used})`);
    this.reached = reached;
  }
}

/**
 * Whether `value` is a LimitReached (of any copy of stet: told by its name and its `reached`).
 *
 * @example if (isLimitReached(error) || isLimitReached(ctx.signal.reason)) return soFar;
 */
export function isLimitReached(value: unknown): value is LimitReached {
  return (
    value instanceof Error &&
    value.name === "LimitReached" &&
    typeof (value as { reached?: unknown }).reached === "object"
  );
}

/** What an attempt has used of its budget so far (or what its next model call may use at most). */
export interface LimitUse {
  turns: number;
  tokens: number;
  outputTokens: number;
  costUsd: number;
}

/**
 * The first limit that `used` plus `next` (the next call's worst case) would cross, or null. A
 * limit is crossed when what is used already reaches it, or when the worst case of the call
 * about to be made would take it beyond: that call is then not made, so an attempt overshoots a
 * limit by at most one call whose worst case was not known.
 *
 * @example crossedLimit({ turns: 3 }, { turns: 3, tokens: 90, outputTokens: 30, costUsd: 0 }, ONE_CALL)
 * // { limit: "turns", value: 3, used: 3 }
 */
export function crossedLimit(
  limits: SampleLimits,
  used: LimitUse,
  next: LimitUse,
): AttemptLimit | null {
  for (const name of LIMIT_NAMES) {
    if (name === "wallMs") continue;
    const value = limits[name];
    if (value === undefined) continue;
    if (used[name] >= value || used[name] + next[name] > value) {
      return { limit: name, value, used: roundUse(used[name]) };
    }
  }
  return null;
}

/** The least a model call uses: one turn, nothing else known. */
export const ONE_CALL: LimitUse = Object.freeze({
  turns: 1,
  tokens: 0,
  outputTokens: 0,
  costUsd: 0,
});

/** Sums of floating cost read as their 12th decimal, so a stored `used` does not show 0.30000000000000004. */
function roundUse(value: number): number {
  return Math.round(value * 1e12) / 1e12;
}
