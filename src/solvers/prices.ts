/** US dollars per one million tokens. */
export interface Price {
  input: number;
  output: number;
}

/**
 * Where the built-in prices come from: the providers' published list prices, standard tier, no
 * batch or cache discount. Prices change; a model missing here, or priced differently for you
 * (a discount, a self-hosted model), takes `prices` on its solver or scorer. A model with no
 * price records its tokens and no cost, and every total says its cost is unknown, never $0.
 */
export const PRICES_SOURCE =
  "OpenAI API pricing (https://openai.com/api/pricing) for OpenAI models; OpenRouter model pages (https://openrouter.ai/models) for vendor-prefixed ids";

/** The date the built-in prices were taken (YYYY-MM-DD); they may have changed since. */
export const PRICES_AS_OF = "2026-11-29";

/**
 * List prices of well-known models (USD per 1M tokens, standard tier, no cache discount), from
 * `PRICES_SOURCE` as of `PRICES_AS_OF`. Keys are bare model ids; OpenRouter ids are listed with
 * their vendor prefix.
 */
export const knownPrices: Readonly<Record<string, Price>> = {
  "gpt-4o": { input: 2.5, output: 10 },
  "gpt-4o-2024-05-13": { input: 5, output: 15 },
  "gpt-4o-mini": { input: 0.15, output: 0.6 },
  "gpt-4.1": { input: 2, output: 8 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4 },
  "gpt-4-turbo": { input: 10, output: 30 },
  "gpt-3.5-turbo": { input: 0.5, output: 1.5 },
  "gpt-5": { input: 1.25, output: 10 },
  "gpt-5-mini": { input: 0.25, output: 2 },
  "gpt-5-nano": { input: 0.05, output: 0.4 },
  o1: { input: 15, output: 60 },
  o3: { input: 2, output: 8 },
  "o3-mini": { input: 1.1, output: 4.4 },
  "o4-mini": { input: 1.1, output: 4.4 },
  "anthropic/claude-3-haiku": { input: 0.25, output: 1.25 },
  "anthropic/claude-3.5-haiku": { input: 0.8, output: 4 },
  "anthropic/claude-3.5-sonnet": { input: 3, output: 15 },
  "anthropic/claude-3.7-sonnet": { input: 3, output: 15 },
  "anthropic/claude-sonnet-4": { input: 3, output: 15 },
  "anthropic/claude-opus-4": { input: 15, output: 75 },
};

/**
 * The price of a model: an exact id first, then without an `openai/` prefix or a dated
 * snapshot suffix (`gpt-4o-mini-2024-07-18` → `gpt-4o-mini`). Undefined when unknown.
 *
 * @example priceFor("openai/gpt-4o-mini-2024-07-18") // { input: 0.15, output: 0.6 }
 */
export function priceFor(model: string): Price | undefined {
  const candidates = [model, model.replace(/^openai\//, "")];
  for (const id of candidates) {
    const price = knownPrices[id] ?? knownPrices[id.replace(/-(\d{4}-\d{2}-\d{2}|\d{8})$/, "")];
    if (price !== undefined) return price;
  }
  return undefined;
}

/**
 * Cost in USD of a call, from an explicit price or the model's known one; undefined when
 * neither is known.
 *
 * @example costUsd("gpt-4o-mini", { inputTokens: 1000, outputTokens: 500 }) // 0.00045
 */
export function costUsd(
  model: string,
  tokens: { inputTokens: number; outputTokens: number },
  price: Price | undefined = priceFor(model),
): number | undefined {
  if (price === undefined) return undefined;
  return (tokens.inputTokens * price.input + tokens.outputTokens * price.output) / 1_000_000;
}
