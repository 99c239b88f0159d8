import * as z from "zod";
import type { ScorerLike, SolverFn } from "../core/eval.js";
import { boundedNumber } from "../core/bounds.js";
import { StetError, thrownMessage } from "../core/errors.js";
import { sampleLimitsSchema } from "../core/limits.js";
import { reducerSchema } from "../core/schemas.js";
import { sandboxConfigSchema } from "../sandbox/index.js";
import {
  EVAL_BRAND,
  type DatasetRow,
  type Eval,
  type EvalDefinition,
  type SampleInput,
} from "./types.js";

const isFunction = (value: unknown): boolean => typeof value === "function";
const isIterable = (value: unknown): boolean =>
  value != null &&
  (isFunction((value as Iterable<unknown>)[Symbol.iterator]) ||
    isFunction((value as AsyncIterable<unknown>)[Symbol.asyncIterator]));

const datasetSchema = z.custom<EvalDefinition["dataset"]>(
  (value) => (typeof value === "string" ? value !== "" : isIterable(value)),
  { message: "expected a file path (.jsonl, .json, .csv), an array or an (async) iterable" },
);

const scorerSchema = z.custom<ScorerLike>().superRefine((scorer, ctx) => {
  const message = scorerProblem(scorer);
  if (message !== undefined) ctx.addIssue({ code: "custom", message });
});

const definitionSchema = z
  .strictObject({
    name: z
      .string()
      .refine((name) => name.trim() !== "", "expected a non-empty string")
      // A name is printed in every summary, listing and report: no terminal control characters.
      .refine(
        // eslint-disable-next-line no-control-regex
        (name) => !/[\u0000-\u001f\u007f-\u009f]/.test(name),
        "expected no control characters",
      ),
    dataset: datasetSchema,
    sample: z
      .custom<(row: DatasetRow) => SampleInput>(isFunction, "expected a function")
      .optional(),
    solver: z.custom<SolverFn>(isFunction, "expected a function (sample, ctx) => output"),
    scorers: z.array(scorerSchema).min(1, "expected at least one scorer"),
    // Numbers within the bounds the CLI and the API check too (`core/bounds.ts`).
    epochs: boundedNumber("epochs").optional(),
    reducer: reducerSchema.optional(),
    concurrency: boundedNumber("concurrency").optional(),
    timeoutMs: boundedNumber("timeoutMs").optional(),
    retries: boundedNumber("retries").optional(),
    maxCost: boundedNumber("maxCost").optional(),
    limits: sampleLimitsSchema.optional(),
    reuse: z.string().min(1, 'expected a run id or "latest"').optional(),
    journal: z
      .union(
        [z.boolean(), z.strictObject({ keep: z.enum(["all", "failed", "open"]).optional() })],
        { error: 'expected true, false or { keep: "all" | "failed" | "open" }' },
      )
      .optional(),
    sandbox: sandboxConfigSchema.optional(),
    rateLimits: z
      .record(
        z.string().min(1),
        z.strictObject({
          rpm: boundedNumber("rpm").optional(),
          tpm: boundedNumber("tpm").optional(),
          windowMs: boundedNumber("rateWindowMs").optional(),
        }),
      )
      .optional(),
    batch: z
      .union(
        [
          z.boolean(),
          z.strictObject({
            maxRequests: z.number().int().min(1).max(50_000).optional(),
            pollSeconds: z.number().min(0.01).max(3_600).optional(),
            window: z.string().min(1).optional(),
          }),
        ],
        {
          error:
            "expected true, false or { maxRequests?: number, pollSeconds?: number, window?: string }",
        },
      )
      .optional(),
    cache: z
      .union(
        [
          z.boolean(),
          z.strictObject({
            ttlDays: boundedNumber("ttlDays").optional(),
            perEpoch: z.boolean().optional(),
          }),
        ],
        { error: "expected true, false or { ttlDays?: number, perEpoch?: boolean }" },
      )
      .optional(),
  })
  .superRefine((def, ctx) => {
    const k = /^pass@(\d+)$/.exec(def.reducer ?? "")?.[1];
    if (k !== undefined && Number(k) > (def.epochs ?? 1)) {
      ctx.addIssue({
        code: "custom",
        path: ["reducer"],
        message: `${def.reducer} needs at least ${k} epochs (epochs is ${def.epochs ?? 1})`,
      });
    }
    const seen = new Set<string>();
    def.scorers.forEach((scorer, index) => {
      // Runs even when a scorer failed its own check (null, a number): only names count here.
      const name: unknown = (scorer as { name?: unknown } | null)?.name;
      if (typeof name !== "string") return;
      if (seen.has(name)) {
        ctx.addIssue({
          code: "custom",
          path: ["scorers", index],
          message: `two scorers are named "${name}"; scores are reported by name, so rename one`,
        });
      }
      seen.add(name);
    });
  });

// A path is also an Iterable<string>: the first overload keeps a path dataset's rows typed as
// JSON objects instead of inferring `Row = string`.
/**
 * Declares an eval: a dataset, a solver, scorers, and how often to run each sample. The
 * definition is validated at once (a bad field throws StetError E_CONFIG naming it) and the
 * result is frozen and branded, so `stet run` recognises it even when it was made by another
 * copy of stet.
 *
 * @example
 * export default defineEval({
 *   name: "arithmetic",
 *   dataset: "./arithmetic.jsonl",
 *   solver: solvers.chat({ model: "openai:gpt-4o-mini", system: "Answer with a number." }),
 *   scorers: [scorers.exact()],
 *   epochs: 3,
 *   reducer: "pass@2",
 * });
 */
export function defineEval(def: EvalDefinition & { dataset: string }): Eval;
export function defineEval<Row = DatasetRow>(def: EvalDefinition<Row>): Eval<Row>;
export function defineEval<Row = DatasetRow>(def: EvalDefinition<Row>): Eval<Row> {
  validate(def);
  return brand(def);
}

/**
 * An eval from a value that is one (from any copy of stet) or a plain definition of one, such
 * as an eval file's default export.
 *
 * @example const ev = asEval((await import("./my-eval.mjs")).default);
 */
export function asEval(value: unknown): Eval {
  return isEval(value) ? value : brand(validate(value));
}

/**
 * True for an eval made by `defineEval`, from this copy of stet or any other (the brand is a
 * `Symbol.for` key, shared across copies).
 *
 * @example isEval(defineEval({ ... })) // true; isEval({ name: "x" }) // false
 */
export function isEval(value: unknown): value is Eval {
  return (
    value !== null &&
    typeof value === "object" &&
    (value as Record<symbol, unknown>)[EVAL_BRAND] === true
  );
}

function validate(def: unknown): EvalDefinition {
  let result: ReturnType<typeof definitionSchema.safeParse>;
  try {
    result = definitionSchema.safeParse(def);
  } catch (cause) {
    // A getter or proxy of the definition threw while it was read: the definition's own bug.
    throw new StetError(
      "E_CONFIG",
      `invalid eval definition: reading it threw: ${thrownMessage(cause)}`,
      { cause },
    );
  }
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = fieldOf(issue);
  const { name } = (def ?? {}) as { name?: unknown };
  const named = typeof name === "string" && name !== "" ? ` "${name}"` : "";
  throw new StetError(
    "E_CONFIG",
    `invalid eval definition${named}: ${field}: ${describe(issue, def)}`,
    {
      details: { field, issues: result.error.issues },
    },
  );
}

function brand<Row>(def: EvalDefinition<Row>): Eval<Row> {
  return Object.freeze({ ...def, scorers: [...def.scorers], [EVAL_BRAND]: true as const });
}

function scorerProblem(scorer: unknown): string | undefined {
  if (typeof scorer === "function") {
    return scorer.name === "" || scorer.name === "anonymous"
      ? 'an anonymous function has no name to report its scores under; use scorers.custom("name", fn) or a named function'
      : undefined;
  }
  const { name, score } = (scorer ?? {}) as { name?: unknown; score?: unknown };
  if (typeof name === "string" && name !== "" && typeof score === "function") return undefined;
  return "expected a scorer: a named function or { name, score }";
}

function fieldOf(issue: z.core.$ZodIssue | undefined): string {
  if (issue?.code === "unrecognized_keys") return issue.keys.join(", ");
  return issue?.path.join(".") || "definition";
}

function describe(issue: z.core.$ZodIssue | undefined, def: unknown): string {
  if (issue === undefined) return "invalid";
  const [key, ...rest] = issue.path;
  const given = (def ?? {}) as Record<PropertyKey, unknown>;
  if (key !== undefined && rest.length === 0 && given[key] === undefined) return "required";
  if (issue.code === "unrecognized_keys") {
    return `unknown field${issue.keys.length > 1 ? "s" : ""} (expected name, dataset, sample, solver, scorers, epochs, reducer, concurrency, timeoutMs, retries, maxCost, limits, reuse, journal, sandbox, cache, rateLimits, batch)`;
  }
  return issue.message;
}
