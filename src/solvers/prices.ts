import type { Price, PriceTiers, UsageFigures } from "../core/types.js";

export type { Price, PriceTiers };

/**
 * Where the built-in prices come from: the providers' published list prices, standard tier, with
 * their prompt-cache tiers where the provider publishes them. Prices change; a model missing here,
 * or priced differently for you (a discount, a self-hosted model), takes `prices` on its solver or
 * scorer. A model with no price, or a call that used a tier with no price, records its tokens and
 * no cost, and every total says its cost is unknown, never $0.
 */
export const PRICES_SOURCE =
  "OpenAI API pricing (https://openai.com/api/pricing) for OpenAI models; Anthropic pricing (https://docs.anthropic.com/en/docs/about-claude/pricing) for Claude ids; OpenRouter model pages (https://openrouter.ai/models) for vendor-prefixed ids";

/** The date the built-in prices were taken (YYYY-MM-DD); they may have changed since. */
export const PRICES_AS_OF = "2026-12-03";

/**
 * List prices of well-known models (USD per 1M tokens, standard tier), from `PRICES_SOURCE` as
 * of `PRICES_AS_OF`. OpenAI: cached input at its published share of input (50%, 25% or 10% by
 * model family); cache writes are billed as plain input and never reported, so no `cacheWrite`.
 * Anthropic: cache reads at 0.1× input and 5-minute cache writes at 1.25× (Claude 3 Haiku's
 * published $0.03 and $0.30); prompts over 200k tokens, 1-hour cache writes and batch prices
 * are not in the table. Keys are bare model ids; OpenRouter ids are listed with their vendor
 * prefix. A tier left out is one whose price is not known here (older OpenAI snapshots have no
 * prompt caching): a call that used it has an unknown cost.
 */
export const knownPrices: Readonly<Record<string, Price>> = {
  "gpt-4o": { input: 2.5, output: 10, cachedInput: 1.25 },
  "gpt-4o-2024-05-13": { input: 5, output: 15 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
  "gpt-4.1": { input: 2, output: 8, cachedInput: 0.5 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cachedInput: 0.1 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4, cachedInput: 0.025 },
  "gpt-4-turbo": { input: 10, output: 30 },
  "gpt-3.5-turbo": { input: 0.5, output: 1.5 },
  "gpt-5": { input: 1.25, output: 10, cachedInput: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cachedInput: 0.025 },
  "gpt-5-nano": { input: 0.05, output: 0.4, cachedInput: 0.005 },
  o1: { input: 15, output: 60, cachedInput: 7.5 },
  o3: { input: 2, output: 8, cachedInput: 0.5 },
  "o3-mini": { input: 1.1, output: 4.4, cachedInput: 0.55 },
  "o4-mini": { input: 1.1, output: 4.4, cachedInput: 0.275 },
  "claude-opus-4-5": { input: 5, output: 25, cachedInput: 0.5, cacheWrite: 6.25 },
  "claude-opus-4-1": { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 },
  "claude-opus-4": { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 },
  "claude-sonnet-4-5": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "claude-haiku-4-5": { input: 1, output: 5, cachedInput: 0.1, cacheWrite: 1.25 },
  "claude-3-7-sonnet": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cachedInput: 0.08, cacheWrite: 1 },
  "claude-3-haiku": { input: 0.25, output: 1.25, cachedInput: 0.03, cacheWrite: 0.3 },
  "anthropic/claude-3-haiku": { input: 0.25, output: 1.25, cachedInput: 0.03, cacheWrite: 0.3 },
  "anthropic/claude-3.5-haiku": { input: 0.8, output: 4, cachedInput: 0.08, cacheWrite: 1 },
  "anthropic/claude-3.5-sonnet": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "anthropic/claude-3.7-sonnet": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "anthropic/claude-sonnet-4": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "anthropic/claude-sonnet-4.5": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "anthropic/claude-haiku-4.5": { input: 1, output: 5, cachedInput: 0.1, cacheWrite: 1.25 },
  "anthropic/claude-opus-4": { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 },
  "anthropic/claude-opus-4.1": { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 },
};

/**
 * The price of a model: an exact id first, then without an `openai/` prefix or a dated
 * snapshot suffix (`gpt-4o-mini-2024-07-18` → `gpt-4o-mini`, `claude-3-7-sonnet-latest` →
 * `claude-3-7-sonnet`). Undefined when unknown.
 *
 * @example priceFor("openai/gpt-4o-mini-2024-07-18") // { input: 0.15, output: 0.6, cachedInput: 0.075 }
 */
export function priceFor(model: string): Price | undefined {
  const candidates = [model, model.replace(/^openai\//, "")];
  for (const id of candidates) {
    const price =
      knownPrices[id] ?? knownPrices[id.replace(/-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/, "")];
    if (price !== undefined) return price;
  }
  return undefined;
}

/**
 * Cost in USD of a call, from an explicit price or the model's known one: uncached input at
 * `input`, cache reads at `cachedInput`, cache writes at `cacheWrite`, output (reasoning
 * included) at `output`. Undefined when no price is known, when the call used a tier whose price
 * is unknown, or when its cached and written tokens exceed its input (figures that cannot be
 * priced): never a guess.
 *
 * @example costUsd("gpt-4o-mini", { inputTokens: 1000, outputTokens: 500 }) // 0.00045
 * @example costUsd("gpt-4o-mini", { inputTokens: 1000, cachedInputTokens: 800, outputTokens: 100 }) // (200·0.15 + 800·0.075 + 100·0.6) / 1e6
 */
export function costUsd(
  model: string,
  tokens: Omit<UsageFigures, "costUsd">,
  price: PriceTiers | undefined = priceFor(model),
): number | undefined {
  if (price === undefined) return undefined;
  const cached = tokens.cachedInputTokens ?? 0;
  const written = tokens.cacheWriteTokens ?? 0;
  if (cached > 0 && price.cachedInput === undefined) return undefined;
  if (written > 0 && price.cacheWrite === undefined) return undefined;
  const uncached = tokens.inputTokens - cached - written;
  if (uncached < 0) return undefined;
  return (
    (uncached * price.input +
      cached * (price.cachedInput ?? 0) +
      written * (price.cacheWrite ?? 0) +
      tokens.outputTokens * price.output) /
    1_000_000
  );
}
