import { StetError } from "../core/errors.js";
import type { Scorer, ScorerArgs, ScoreValue } from "../core/eval.js";
import { canonicalJson, type Json } from "../core/json.js";
import type { Trajectory, TrajectoryToolCall } from "../core/trajectory.js";

/** How `toolSequence` compares the attempt's tool calls with the expected names. */
export type ToolSequenceMode = "exact" | "in-order" | "any-order";

export interface ToolSequenceOptions {
  /**
   * `exact` (default): the calls' names are the expected list, no more, no fewer. `in-order`: the
   * expected names appear in that order, other calls allowed between and around them.
   * `any-order`: each expected name appears (as often as it is listed), in any order, other calls
   * allowed.
   */
  mode?: ToolSequenceMode;
}

/** An expected tool call of `toolCallF1`: its name and, optionally, its exact arguments. */
export interface ExpectedToolCall {
  name: string;
  /** Compared as canonical JSON (key order does not matter); absent: any arguments match. */
  arguments?: Json;
}

/**
 * 1 when the attempt called the tool `name` at least once, else 0 (see Trajectory for what counts
 * as a tool call). Skipped, with the reason, when the attempt's trajectory is unknown.
 *
 * @example scorers.toolUsed("search") // 1 for an attempt whose model called search
 */
export function toolUsed(name: string): Scorer {
  if (typeof name !== "string" || name === "")
    misconfigured("scorers.toolUsed(name) needs a tool name");
  return trajectoryScorer("toolUsed", { kind: "toolUsed", tool: name }, (calls) => {
    const count = calls.filter((c) => c.name === name).length;
    return { value: count > 0 ? 1 : 0, metadata: { calls: count } };
  });
}

/**
 * 1 when the names of the attempt's tool calls match `expected` by `mode` (exact, in-order,
 * any-order; see ToolSequenceOptions), else 0; the calls' names are in the score's metadata.
 *
 * @example scorers.toolSequence(["search", "read"], { mode: "in-order" }) // search, ls, read: 1
 */
export function toolSequence(
  expected: readonly string[],
  options: ToolSequenceOptions = {},
): Scorer {
  const mode = options.mode ?? "exact";
  checkNames("scorers.toolSequence(expected)", expected);
  if (!MODES.includes(mode)) {
    misconfigured(
      `scorers.toolSequence: mode must be one of ${MODES.map((m) => `"${m}"`).join(", ")} (got ${JSON.stringify(mode)})`,
    );
  }
  return trajectoryScorer(
    "toolSequence",
    { kind: "toolSequence", expected: [...expected], mode },
    (calls) => {
      const names = calls.map((c) => c.name);
      return { value: sequenceMatches(names, expected, mode) ? 1 : 0, metadata: { calls: names } };
    },
  );
}

/**
 * The F1 of the attempt's tool calls against `expected`, as multisets: a call matches an expected
 * one of its name (and of its arguments, when given), each call and each expected one at most
 * once. precision = matched / calls, recall = matched / expected, F1 = 2·matched / (calls +
 * expected); 1 when both are empty.
 *
 * @example scorers.toolCallF1([{ name: "add", arguments: { a: 1, b: 2 } }, { name: "answer" }])
 */
export function toolCallF1(expected: readonly ExpectedToolCall[]): Scorer {
  checkNames(
    "scorers.toolCallF1(expected)",
    Array.isArray(expected) ? expected.map((e) => e?.name) : expected,
  );
  const described = expected.map((e): Json =>
    e.arguments === undefined ? { name: e.name } : { name: e.name, arguments: e.arguments },
  );
  return trajectoryScorer("toolCallF1", { kind: "toolCallF1", expected: described }, (calls) => {
    const matched = matchedCalls(calls, expected);
    const total = calls.length + expected.length;
    return {
      value: total === 0 ? 1 : (2 * matched) / total,
      metadata: {
        matched,
        calls: calls.length,
        expected: expected.length,
        precision: calls.length === 0 ? (expected.length === 0 ? 1 : 0) : matched / calls.length,
        recall: expected.length === 0 ? 1 : matched / expected.length,
      },
    };
  });
}

/**
 * 1 when the attempt made at most `max` model calls (its turns), else 0; the count is in the
 * score's metadata.
 *
 * @example scorers.turns({ max: 5 })
 */
export function turns(options: { max: number }): Scorer {
  const { max } = options;
  if (!Number.isInteger(max) || max < 0) {
    misconfigured(`scorers.turns: max must be a non-negative integer (got ${String(max)})`);
  }
  return trajectoryScorer("turns", { kind: "turns", max }, (_calls, trajectory) => {
    const count = trajectory.calls.length;
    return { value: count <= max ? 1 : 0, metadata: { turns: count, max } };
  });
}

const MODES: readonly ToolSequenceMode[] = ["exact", "in-order", "any-order"];

function misconfigured(message: string): never {
  throw new StetError("E_CONFIG", message);
}

/** Refuses a list that is not of tool names (an eval in JavaScript has no types to say so). */
function checkNames(what: string, names: unknown): void {
  if (!Array.isArray(names)) misconfigured(`${what} needs a list (got ${typeof names})`);
  const bad = names.findIndex((n) => typeof n !== "string" || n === "");
  if (bad >= 0) misconfigured(`${what}: item ${bad} has no tool name (a non-empty string)`);
}

/** Whether `names` match `expected` by `mode`. */
export function sequenceMatches(
  names: readonly string[],
  expected: readonly string[],
  mode: ToolSequenceMode,
): boolean {
  switch (mode) {
    case "exact":
      return names.length === expected.length && names.every((n, i) => n === expected[i]);
    case "in-order": {
      let next = 0;
      for (const name of names) if (name === expected[next]) next++;
      return next === expected.length;
    }
    case "any-order": {
      const left = new Map<string, number>();
      for (const name of names) left.set(name, (left.get(name) ?? 0) + 1);
      return expected.every((name) => {
        const n = left.get(name) ?? 0;
        left.set(name, n - 1);
        return n > 0;
      });
    }
  }
}

/**
 * The most calls that can be paired with expected ones. Expected calls with arguments pair
 * first: each can take only calls of its name and arguments, while one without arguments takes
 * any call of its name, so taking the narrow ones first never costs a pair.
 */
function matchedCalls(
  calls: readonly TrajectoryToolCall[],
  expected: readonly ExpectedToolCall[],
): number {
  const free = calls.map((c) => ({ name: c.name, args: canonicalJson(c.arguments) }));
  const narrow = expected.filter((e) => e.arguments !== undefined);
  const wide = expected.filter((e) => e.arguments === undefined);
  let matched = 0;
  for (const e of [...narrow, ...wide]) {
    const args = e.arguments === undefined ? undefined : canonicalJson(e.arguments);
    const i = free.findIndex((c) => c.name === e.name && (args === undefined || c.args === args));
    if (i < 0) continue;
    free.splice(i, 1);
    matched++;
  }
  return matched;
}

/** A scorer of the trajectory's tool calls, skipped (with the reason) when it is unknown. */
function trajectoryScorer(
  name: string,
  config: Record<string, Json>,
  score: (
    calls: readonly TrajectoryToolCall[],
    trajectory: Extract<Trajectory, { known: true }>,
  ) => ScoreValue,
): Scorer {
  return {
    name,
    describe: () => config,
    score: ({ trajectory }: ScorerArgs): ScoreValue => {
      if (trajectory === undefined) {
        return { value: null, skipped: "no trajectory: the scorer was called without one" };
      }
      if (!trajectory.known) return { value: null, skipped: trajectory.reason };
      return score(trajectory.toolCalls, trajectory);
    },
  };
}
