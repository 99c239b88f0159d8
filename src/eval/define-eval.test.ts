import { describe, expect, it } from "vitest";
import type { ScorerArgs } from "../core/eval.js";
import { asEval, defineEval, isEval } from "./define-eval.js";
import { EVAL_BRAND, type EvalDefinition } from "./types.js";

function exact({ output, sample }: ScorerArgs) {
  return output === sample.target;
}

const valid: EvalDefinition = {
  name: "arithmetic",
  dataset: [{ input: "1+1", target: "2" }],
  solver: () => "2",
  scorers: [exact, { name: "length", score: () => 1 }],
};

describe("defineEval", () => {
  it("returns the definition frozen and branded", () => {
    const ev = defineEval(valid);
    expect(ev).toMatchObject({ name: "arithmetic", dataset: valid.dataset, solver: valid.solver });
    expect(ev.scorers).toEqual(valid.scorers);
    expect(ev[EVAL_BRAND]).toBe(true);
    expect(Object.isFrozen(ev)).toBe(true);
    expect(isEval(ev)).toBe(true);
  });

  it("accepts every option and reducer", () => {
    for (const reducer of ["mean", "max", "min", "mode", "pass@3"] as const) {
      const options = {
        epochs: 3,
        reducer,
        concurrency: 4,
        timeoutMs: 500,
        retries: 0,
        maxCost: 2.5,
      };
      expect(defineEval({ ...valid, ...options })).toMatchObject(options);
    }
  });

  it("types a path dataset's rows as JSON objects in the mapper", () => {
    const path: string = "./humaneval.jsonl";
    const ev = defineEval({
      ...valid,
      dataset: path,
      sample: (row) => ({ id: String(row.task_id), input: row.prompt ?? null }),
    });
    expect(ev.dataset).toBe(path);
  });

  it.each([
    ["name", { name: "" }, /name: expected a non-empty string/],
    ["dataset", { dataset: 42 }, /dataset: expected a file path/],
    ["dataset", { dataset: "" }, /dataset: expected a file path/],
    ["solver", { solver: "gpt-4o" }, /solver: expected a function/],
    ["scorers", { scorers: [] }, /scorers: expected at least one scorer/],
    ["scorers.1", { scorers: [exact, { name: "x" }] }, /scorers\.1: expected a scorer/],
    ["scorers.0", { scorers: [() => 1] }, /scorers\.0: an anonymous function/],
    ["scorers.0", { scorers: [null] }, /scorers\.0: expected a scorer/],
    ["scorers.1", { scorers: [exact, 7] }, /scorers\.1: expected a scorer/],
    [
      "scorers.1",
      { scorers: [exact, { name: "exact", score: exact }] },
      /two scorers are named "exact"/,
    ],
    ["epochs", { epochs: 0 }, /epochs: /],
    ["epochs", { epochs: 1.5 }, /epochs: /],
    ["reducer", { reducer: "median" }, /reducer: /],
    ["reducer", { epochs: 2, reducer: "pass@3" }, /reducer: pass@3 needs at least 3 epochs/],
    ["reducer", { reducer: "pass@2" }, /reducer: pass@2 needs at least 2 epochs \(epochs is 1\)/],
    ["concurrency", { concurrency: -1 }, /concurrency: /],
    ["timeoutMs", { timeoutMs: 0 }, /timeoutMs: /],
    ["retries", { retries: -1 }, /retries: /],
    ["maxCost", { maxCost: 0 }, /maxCost: /],
    ["maxCost", { maxCost: -1 }, /maxCost: /],
    ["maxCost", { maxCost: "0.5" }, /maxCost: /],
    ["sample", { sample: "id" }, /sample: expected a function/],
    ["epoch", { epoch: 3 }, /epoch: unknown field/],
  ])("rejects a bad %s with E_CONFIG naming the field", (field, change, message) => {
    const attempt = () => defineEval({ ...valid, ...change } as EvalDefinition);
    expect(attempt).toThrow(message);
    expect(attempt).toThrow(
      expect.objectContaining({ code: "E_CONFIG", details: expect.objectContaining({ field }) }),
    );
  });

  it("names the eval in the message", () => {
    expect(() => defineEval({ ...valid, epochs: 0 })).toThrow(
      /^invalid eval definition "arithmetic": epochs:/,
    );
  });

  it("reports a missing field as required", () => {
    const { solver: _, ...rest } = valid;
    expect(() => defineEval(rest as EvalDefinition)).toThrow(/solver: required/);
  });
});

describe("isEval and asEval", () => {
  it("accept an eval branded by another copy of stet", () => {
    const foreign = Object.freeze({ ...valid, [Symbol.for("stet.eval")]: true });
    expect(isEval(foreign)).toBe(true);
    expect(asEval(foreign)).toBe(foreign);
  });

  it("isEval rejects unbranded values", () => {
    for (const value of [valid, null, undefined, 1, "eval", () => valid]) {
      expect(isEval(value)).toBe(false);
    }
  });

  it("asEval validates and brands a plain definition", () => {
    expect(isEval(asEval({ ...valid }))).toBe(true);
    expect(() => asEval({ ...valid, epochs: -1 })).toThrow(
      expect.objectContaining({ code: "E_CONFIG" }),
    );
  });
});
