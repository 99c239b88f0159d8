import * as z from "zod";
import type { ScoreValue, SolverResult, SolverReturn } from "./eval.js";
import { isJson, jsonSchema } from "./json.js";
import { isPlainUsage, retriesSchema, usageSchema } from "./schemas.js";
import type { Score } from "./types.js";

const solverResultSchema = z.object({
  output: jsonSchema,
  usage: usageSchema.optional(),
  transcript: jsonSchema.optional(),
  retries: retriesSchema.optional(),
});

/**
 * A solver may return a bare value or `{ output, usage?, transcript?, retries? }`; this gives the
 * latter.
 * Throws, saying what and where, when the output is not JSON-serialisable (a function, a
 * symbol, `undefined`, a BigInt, a circular or over-deep value).
 *
 * @example normalizeSolverReturn("42") // { output: "42" }
 */
export function normalizeSolverReturn(value: SolverReturn | undefined): SolverResult {
  if (value !== null && typeof value === "object" && !Array.isArray(value) && "output" in value) {
    const plain = plainResult(value as Record<string, unknown>);
    if (plain) return plain;
    const parsed = solverResultSchema.safeParse(value);
    if (parsed.success) return parsed.data;
    const [issue] = parsed.error.issues;
    const [field, ...path] = issue?.path ?? [];
    if (issue?.code === "custom" && (field === "output" || field === "transcript")) {
      throw notSerialisable(String(field), path, issue.message);
    }
    throw new Error(`solver returned an invalid result: ${parsed.error.message}`);
  }
  if (isJson(value)) return { output: value };
  const parsed = jsonSchema.safeParse(value);
  if (parsed.success) return { output: parsed.data };
  const [issue] = parsed.error.issues;
  throw notSerialisable("output", issue?.path ?? [], issue?.message ?? "not JSON");
}

const RESULT_FIELDS: ReadonlySet<string> = new Set(["output", "usage", "transcript", "retries"]);

/**
 * A `{ output, usage?, transcript?, retries? }` that `solverResultSchema` accepts, checked
 * without zod (every attempt's solver returns here), or undefined for the schema to decide and
 * word. The same value as the schema's parse: the usage object itself, no member it drops.
 */
function plainResult(value: Record<string, unknown>): SolverResult | undefined {
  if (Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  for (const key in value) if (!RESULT_FIELDS.has(key)) return undefined;
  const { output, usage, transcript, retries } = value;
  if (!isJson(output)) return undefined;
  if (transcript !== undefined && !isJson(transcript)) return undefined;
  if (retries !== undefined && !(Number.isSafeInteger(retries) && (retries as number) >= 0)) {
    return undefined;
  }
  if (usage !== undefined && !isPlainUsage(usage)) return undefined;
  const result: SolverResult = { output };
  if (usage !== undefined) result.usage = usage as SolverResult["usage"] & object;
  if (transcript !== undefined) result.transcript = transcript;
  if (retries !== undefined) result.retries = retries as number;
  return result;
}

/** `solver output is not JSON-serialisable: output.a.b: a BigInt (10n) is not JSON; …` */
function notSerialisable(field: string, path: PropertyKey[], message: string): Error {
  const where = path.length > 0 ? `${[field, ...path.map(String)].join(".")}: ` : "";
  const why = message === "required" ? "undefined is not JSON" : message;
  return new Error(`solver ${field} is not JSON-serialisable: ${where}${why}`);
}

/**
 * Turns what a scorer returned into a Score: booleans become 0/1, numbers must lie in [0, 1].
 *
 * @example normalizeScore("exact", true) // { scorer: "exact", value: 1 }
 */
export function normalizeScore(scorer: string, value: ScoreValue): Score {
  const details = typeof value === "object" && value !== null ? value : { value };
  if (details.value === null && "skipped" in details && typeof details.skipped === "string") {
    const skip: Score = { scorer, value: null, skipped: details.skipped };
    if (details.explanation !== undefined) skip.explanation = details.explanation;
    if (details.metadata !== undefined) skip.metadata = details.metadata;
    return skip;
  }
  const raw = details.value;
  const number = typeof raw === "boolean" ? (raw ? 1 : 0) : raw;
  if (typeof number !== "number" || !Number.isFinite(number) || number < 0 || number > 1) {
    throw new Error(
      `scorer "${scorer}" returned ${describe(raw)}; a score is a number in [0, 1] or a boolean`,
    );
  }
  const score: Score = { scorer, value: number };
  if ("answer" in details && details.answer !== undefined) score.answer = String(details.answer);
  if ("explanation" in details && details.explanation !== undefined) {
    score.explanation = String(details.explanation);
  }
  if ("metadata" in details && details.metadata !== undefined) score.metadata = details.metadata;
  return score;
}

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "function") return "a function";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
