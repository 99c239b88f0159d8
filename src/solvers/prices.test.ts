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
    ["my-finetune", undefined],
  ])("%s → %j", (model, expected) => {
    expect(priceFor(model)).toEqual(expected);
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
