import type { Usage, UsageFigures } from "./types.js";

/** The tiers of a usage besides input and output tokens, in the order they are listed. */
export const USAGE_TIERS = ["cachedInputTokens", "cacheWriteTokens", "reasoningTokens"] as const;

/**
 * Two usages added, tiers and the reused part included. The sum has a cost only when every part
 * that used tokens had one: a priced solver with an unpriced judge has an unknown cost, not the
 * solver's.
 *
 * @example addUsage({ inputTokens: 10, outputTokens: 2, costUsd: 1 }, { inputTokens: 5, outputTokens: 1 }).costUsd // undefined
 */
export function addUsage(total: Usage | null, more: Usage): Usage {
  if (total === null) return copyUsage(more);
  const sum: Usage = addFigures(total, more);
  if (total.reused !== undefined || more.reused !== undefined) {
    sum.reused = addFigures(total.reused ?? NONE, more.reused ?? NONE);
  }
  return sum;
}

/**
 * A call's usage as replayed from the journal: all of it is reused (paid for by the execution
 * that recorded it), and it stays part of the attempt's trajectory.
 *
 * @example reusedUsage({ inputTokens: 7, outputTokens: 2 }) // { inputTokens: 7, outputTokens: 2, reused: { inputTokens: 7, outputTokens: 2 } }
 */
export function reusedUsage(usage: Usage): Usage {
  const figures = figuresOf(usage);
  return { ...figures, reused: { ...figures } };
}

/**
 * What a usage bought now: the whole less its reused part. Its cost is unknown when the whole's
 * is, or when the reused part used tokens at no known price.
 *
 * @example boughtUsage({ inputTokens: 9, outputTokens: 3, costUsd: 3, reused: { inputTokens: 7, outputTokens: 2, costUsd: 2 } }) // { inputTokens: 2, outputTokens: 1, costUsd: 1 }
 */
export function boughtUsage(usage: Usage): UsageFigures {
  const reused = usage.reused;
  if (reused === undefined) return figuresOf(usage);
  const bought: UsageFigures = {
    inputTokens: usage.inputTokens - reused.inputTokens,
    outputTokens: usage.outputTokens - reused.outputTokens,
  };
  for (const tier of USAGE_TIERS) {
    if (usage[tier] !== undefined) bought[tier] = usage[tier] - (reused[tier] ?? 0);
  }
  if (usage.costUsd !== undefined && (reused.costUsd !== undefined || !usedTokens(reused))) {
    bought.costUsd = usage.costUsd - (reused.costUsd ?? 0);
  }
  return bought;
}

/** A usage's own figures, without its reused part. */
export function figuresOf(usage: UsageFigures): UsageFigures {
  const figures: UsageFigures = {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
  };
  for (const tier of USAGE_TIERS) if (usage[tier] !== undefined) figures[tier] = usage[tier];
  if (usage.costUsd !== undefined) figures.costUsd = usage.costUsd;
  return figures;
}

const NONE: UsageFigures = { inputTokens: 0, outputTokens: 0, costUsd: 0 };

function copyUsage(usage: Usage): Usage {
  const copy: Usage = figuresOf(usage);
  if (usage.reused !== undefined) copy.reused = figuresOf(usage.reused);
  return copy;
}

function usedTokens(u: UsageFigures): boolean {
  return u.inputTokens + u.outputTokens > 0;
}

function addFigures(a: UsageFigures, b: UsageFigures): UsageFigures {
  const sum: UsageFigures = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
  for (const tier of USAGE_TIERS) {
    if (a[tier] !== undefined || b[tier] !== undefined) sum[tier] = (a[tier] ?? 0) + (b[tier] ?? 0);
  }
  const priced = (u: UsageFigures) => u.costUsd !== undefined || !usedTokens(u);
  if ((a.costUsd !== undefined || b.costUsd !== undefined) && priced(a) && priced(b)) {
    sum.costUsd = (a.costUsd ?? 0) + (b.costUsd ?? 0);
  }
  return sum;
}
