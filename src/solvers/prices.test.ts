import { describe, expect, it } from "vitest";
import { bareModel } from "./model-name.js";
import { costUsd, priceFor } from "./prices.js";

describe("priceFor", () => {
  it.each([
    ["gpt-4o-mini", { input: 0.15, output: 0.6 }],
    ["gpt-4o-mini-2024-07-18", { input: 0.15, output: 0.6 }],
    ["openai/gpt-4o", { input: 2.5, output: 10 }],
    ["gpt-4o-2024-05-13", { input: 5, output: 15 }],
    ["gpt-4.1-nano", { input: 0.1, output: 0.4 }],
    ["o4-mini", { input: 1.1, output: 4.4 }],
    ["anthropic/claude-3.5-sonnet", { input: 3, output: 15 }],
    ["claude-sonnet-4-5", { input: 3, output: 15 }],
    ["claude-opus-4-1", { input: 15, output: 75 }],
    ["claude-haiku-4-5", { input: 1, output: 5 }],
    ["my-finetune", undefined],
  ])("%s → %j", (model, expected) => {
    if (expected === undefined) expect(priceFor(model)).toBeUndefined();
    else expect(priceFor(model)).toMatchObject(expected);
  });
});

describe("costUsd", () => {
  it.each([
    ["gpt-4o-mini", undefined, 0.00045],
    ["unknown-model", undefined, undefined],
    ["unknown-model", { input: 2, output: 4 }, 0.004],
  ])("%s with price %j → %s", (model, price, expected) => {
    const cost = costUsd(model, { inputTokens: 1000, outputTokens: 500 }, price ?? priceFor(model));
    if (expected === undefined) expect(cost).toBeUndefined();
    else expect(cost).toBeCloseTo(expected, 12);
  });
});

describe("costUsd by tier", () => {
  const price = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };

  it("prices uncached input, cache reads and output (reasoning included) each at its tier", () => {
    const tokens = {
      inputTokens: 1000,
      cachedInputTokens: 800,
      outputTokens: 100,
      reasoningTokens: 40,
    };
    const expected = (200 * 3 + 800 * 0.3 + 100 * 15) / 1e6;
    expect(Math.abs(costUsd("m", tokens, price)! - expected)).toBeLessThan(1e-12);
  });

  it("prices cache writes at their tier", () => {
    const tokens = {
      inputTokens: 1000,
      cachedInputTokens: 500,
      cacheWriteTokens: 300,
      outputTokens: 10,
    };
    const expected = (200 * 3 + 500 * 0.3 + 300 * 3.75 + 10 * 15) / 1e6;
    expect(Math.abs(costUsd("m", tokens, price)! - expected)).toBeLessThan(1e-12);
  });

  it.each([
    ["a cache read with no cachedInput price", { cachedInputTokens: 10 }, { input: 1, output: 2 }],
    [
      "a cache write with no cacheWrite price",
      { cacheWriteTokens: 10 },
      { input: 1, output: 2, cachedInput: 0.1 },
    ],
    ["cached tokens beyond the input", { cachedInputTokens: 2000 }, price],
  ])("is unknown (never guessed) for %s", (_what, tiers, tierPrice) => {
    expect(
      costUsd("m", { inputTokens: 1000, outputTokens: 5, ...tiers }, tierPrice),
    ).toBeUndefined();
  });

  it("needs no tier price for a call that used none", () => {
    expect(
      costUsd(
        "m",
        { inputTokens: 1000, cachedInputTokens: 0, outputTokens: 0 },
        { input: 1, output: 2 },
      ),
    ).toBe(0.001);
  });

  it.each([
    ["gpt-4o-mini", 0.075, undefined],
    ["gpt-4.1-2025-04-14", 0.5, undefined],
    ["gpt-5-mini", 0.025, undefined],
    ["gpt-4-turbo", undefined, undefined],
    ["claude-sonnet-4-5-20250929", 0.3, 3.75],
    ["claude-haiku-4-5", 0.1, 1.25],
    ["claude-opus-4-1", 1.5, 18.75],
    ["claude-3-7-sonnet-latest", 0.3, 3.75],
    ["anthropic/claude-3.5-sonnet", 0.3, 3.75],
  ])("the built-in table prices %s's cache reads at %s and writes at %s", (model, read, write) => {
    expect(priceFor(model)?.cachedInput).toBe(read);
    expect(priceFor(model)?.cacheWrite).toBe(write);
  });
});

describe("bareModel", () => {
  it.each([
    ["openai:gpt-4o-mini", "gpt-4o-mini"],
    ["gpt-4o-mini", "gpt-4o-mini"],
    ["ollama:llama3:8b", "llama3:8b"],
    ["llama3:8b", "llama3:8b"],
    ["openrouter:anthropic/claude-3.5-sonnet", "anthropic/claude-3.5-sonnet"],
  ])("%s → %s", (model, expected) => {
    expect(bareModel(model)).toBe(expected);
  });
});
