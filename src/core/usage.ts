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
  for (const part of PARTS) {
    if (total[part] !== undefined || more[part] !== undefined) {
      sum[part] = addFigures(total[part] ?? NONE, more[part] ?? NONE);
    }
  }
  return sum;
}

/** The parts a usage may carry besides its own figures. */
const PARTS = ["reused", "carried"] as const;

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
 * A call's usage as replayed from the journal of an earlier attempt of the key that ended in
 * error: that attempt's stored usage counts it, so it adds nothing to this attempt's figures (or
 * to any spend), only to its trajectory (`carried`; see trajectoryUsage).
 *
 * @example carriedUsage({ inputTokens: 7, outputTokens: 2 }) // { inputTokens: 0, outputTokens: 0, costUsd: 0, carried: { inputTokens: 7, outputTokens: 2 } }
 */
export function carriedUsage(usage: Usage): Usage {
  return { ...NONE, carried: figuresOf(usage) };
}

/**
 * An attempt's whole trajectory, as exports and the sample view show it: its own figures and
 * the calls it carried from an errored attempt of its key, which count as replayed (`reused`).
 * The same as `usage` when nothing was carried. Spend is never summed from it: the carried calls
 * are in the errored attempt's figures.
 *
 * @example trajectoryUsage({ inputTokens: 3, outputTokens: 1, carried: { inputTokens: 7, outputTokens: 2 } }) // { inputTokens: 10, outputTokens: 3, reused: { inputTokens: 7, outputTokens: 2 } }
 */
export function trajectoryUsage(usage: Usage): Usage {
  const { carried, reused, ...own } = usage;
  if (carried === undefined) return usage;
  return { ...addFigures(own, carried), reused: addFigures(reused ?? NONE, carried) };
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
  // Named one by one, not by a loop over USAGE_TIERS: this runs for every call's usage.
  if (usage.cachedInputTokens !== undefined) figures.cachedInputTokens = usage.cachedInputTokens;
  if (usage.cacheWriteTokens !== undefined) figures.cacheWriteTokens = usage.cacheWriteTokens;
  if (usage.reasoningTokens !== undefined) figures.reasoningTokens = usage.reasoningTokens;
  if (usage.costUsd !== undefined) figures.costUsd = usage.costUsd;
  return figures;
}

const NONE: UsageFigures = { inputTokens: 0, outputTokens: 0, costUsd: 0 };

function copyUsage(usage: Usage): Usage {
  const copy: Usage = figuresOf(usage);
  if (usage.reused !== undefined) copy.reused = figuresOf(usage.reused);
  if (usage.carried !== undefined) copy.carried = figuresOf(usage.carried);
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
