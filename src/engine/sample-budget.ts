import type { CallWorstCase } from "../core/eval.js";
import {
  crossedLimit,
  LimitReached,
  ONE_CALL,
  type AttemptLimit,
  type LimitUse,
  type SampleLimits,
} from "../core/limits.js";
import type { Usage } from "../core/types.js";

/**
 * One attempt's per-sample limits, checked by its context before each model call (with the
 * call's worst case when the caller knows it) and each step. The first limit reached is kept
 * (`reached`) and every later check throws it again, so a solver that goes on after catching it
 * makes no further call. What counts as used is the attempt's model calls so far (`usage`: the
 * solver context's, replayed and carried calls included) and how many were made.
 */
export class SampleBudget {
  readonly limits: SampleLimits;
  readonly #usage: readonly Usage[];
  #turns = 0;
  #reached: AttemptLimit | null = null;

  constructor(limits: SampleLimits, usage: readonly Usage[]) {
    this.limits = limits;
    this.#usage = usage;
  }

  /** The limit that ended the attempt, once one did. */
  get reached(): AttemptLimit | null {
    return this.#reached;
  }

  /**
   * Before a model call: throws LimitReached when the attempt reached a limit, or when the call's
   * worst case would cross one (the call is then not made); else counts the call as a turn.
   */
  beforeCall(worst?: CallWorstCase): void {
    const next: LimitUse = worst
      ? {
          turns: 1,
          tokens: worst.inputTokens + worst.outputTokens,
          outputTokens: worst.outputTokens,
          costUsd: worst.costUsd,
        }
      : ONE_CALL;
    this.#check(this.limits, next);
    this.#turns++;
  }

  /** Before a step (a tool's execution): throws LimitReached when the attempt reached a limit. */
  beforeStep(): void {
    // A step is no model call: the turns made so far may equal the limit, not go past it.
    const { turns: _turns, ...limits } = this.limits;
    this.#check(limits, NOTHING);
  }

  /** The wall-time limit ran out after `elapsedMs`: the attempt ends (if nothing ended it before). */
  wallRanOut(elapsedMs: number): LimitReached {
    const value = this.limits.wallMs ?? 0;
    // The timer fires once the limit passed on its own clock, which may read a millisecond
    // short of performance.now()'s: the time used is never less than the limit that ran out.
    this.#reached ??= { limit: "wallMs", value, used: Math.max(value, elapsedMs) };
    return new LimitReached(this.#reached);
  }

  #check(limits: SampleLimits, next: LimitUse): void {
    if (this.#reached) throw new LimitReached(this.#reached);
    const crossed = crossedLimit(limits, this.#used(), next);
    if (!crossed) return;
    this.#reached = crossed;
    throw new LimitReached(crossed);
  }

  #used(): LimitUse {
    const used: LimitUse = { turns: this.#turns, tokens: 0, outputTokens: 0, costUsd: 0 };
    for (const usage of this.#usage) {
      // A call carried from an errored attempt of the key (replayed by its retry) is part of the
      // trajectory too, though no spend of this attempt's: the limit counts it.
      for (const figures of usage.carried ? [usage, usage.carried] : [usage]) {
        used.tokens += figures.inputTokens + figures.outputTokens;
        used.outputTokens += figures.outputTokens;
        used.costUsd += figures.costUsd ?? 0;
      }
    }
    return used;
  }
}

const NOTHING: LimitUse = Object.freeze({ turns: 0, tokens: 0, outputTokens: 0, costUsd: 0 });
