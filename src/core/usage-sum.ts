import type { UsageTotal } from "./aggregate.js";
import { ExactSum } from "./exact-sum.js";
import type { UsageFigures } from "./types.js";

/**
 * A `UsageTotal` kept with its cost as an exact sum (`ExactSum`): the same attempts and scorings
 * give the same total in any order, and one taken away again leaves no trace, so a total kept up
 * to date commit by commit equals one summed over every stored row. Token counts are integers,
 * exact as plain numbers.
 *
 * @example new UsageSum().add({ inputTokens: 3, outputTokens: 1, costUsd: 0.1 }).total().costUsd // 0.1
 */
export class UsageSum {
  attempts = 0;
  inputTokens = 0;
  outputTokens = 0;
  cachedInputTokens = 0;
  cacheWriteTokens = 0;
  reasoningTokens = 0;
  unpriced = 0;
  cost = new ExactSum();

  /** One attempt, with its usage when it has any (as `addUsage`); sign -1 takes it away. */
  add(usage: UsageFigures | null, sign: 1 | -1 = 1): this {
    this.attempts += sign;
    if (usage !== null) this.addScoring(usage, sign);
    return this;
  }

  /** What a scoring spent: spend, but no attempt of its own (as `addScoringUsage`). */
  addScoring(usage: UsageFigures, sign: 1 | -1 = 1): this {
    this.inputTokens += sign * usage.inputTokens;
    this.outputTokens += sign * usage.outputTokens;
    this.cachedInputTokens += sign * (usage.cachedInputTokens ?? 0);
    this.cacheWriteTokens += sign * (usage.cacheWriteTokens ?? 0);
    this.reasoningTokens += sign * (usage.reasoningTokens ?? 0);
    if (usage.costUsd !== undefined) this.cost.add(sign * usage.costUsd);
    else if (usage.inputTokens + usage.outputTokens > 0) this.unpriced += sign;
    return this;
  }

  /** Another sum added (or, with sign -1, taken away). */
  addSum(other: UsageSum, sign: 1 | -1 = 1): this {
    this.attempts += sign * other.attempts;
    this.inputTokens += sign * other.inputTokens;
    this.outputTokens += sign * other.outputTokens;
    this.cachedInputTokens += sign * other.cachedInputTokens;
    this.cacheWriteTokens += sign * other.cacheWriteTokens;
    this.reasoningTokens += sign * other.reasoningTokens;
    this.unpriced += sign * other.unpriced;
    this.cost.addSum(other.cost, sign);
    return this;
  }

  /**
   * The total as reports give it: the cost rounded once; null when some usage is unpriced and
   * the priced part cost nothing (nothing is known of the cost then).
   */
  total(): UsageTotal {
    const { cost, ...counts } = this;
    return {
      attempts: counts.attempts,
      inputTokens: counts.inputTokens,
      outputTokens: counts.outputTokens,
      cachedInputTokens: counts.cachedInputTokens,
      cacheWriteTokens: counts.cacheWriteTokens,
      reasoningTokens: counts.reasoningTokens,
      costUsd: this.unpriced > 0 && cost.isZero() ? null : cost.toNumber(),
      unpriced: counts.unpriced,
    };
  }
}
