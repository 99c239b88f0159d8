import { describe, expect, it } from "vitest";
import { batchPrice } from "./batch-call.js";

describe("batchPrice", () => {
  it.each([
    [
      "a built-in OpenAI model: half of every tier",
      "gpt-4o-mini",
      undefined,
      { input: 0.075, output: 0.3, cachedInput: 0.0375 },
    ],
    [
      "a built-in Anthropic model: half, cache writes too",
      "claude-haiku-4-5",
      undefined,
      { input: 0.5, output: 2.5, cachedInput: 0.05, cacheWrite: 0.625 },
    ],
    [
      "explicit prices without a batch tier: half of them",
      "my-model",
      { input: 2, output: 8 },
      { input: 1, output: 4 },
    ],
    [
      "prices.batch: as given",
      "gpt-4o-mini",
      { input: 2, output: 8, batch: { input: 0.7, output: 0.9 } },
      { input: 0.7, output: 0.9 },
    ],
    ["an unknown model without prices: no price", "unknown-model", undefined, undefined],
  ])("%s", (_name, model, price, expected) => {
    expect(batchPrice(model, price)).toEqual(expected);
  });
});
