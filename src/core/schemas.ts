import * as z from "zod";
import { jsonSchema } from "./json.js";
import { sampleLimitsSchema } from "./limits.js";

/** zod schemas for domain values read back from a store column, a file or the network. */

export const sampleSchema = z.object({
  id: z.string().min(1),
  input: jsonSchema,
  target: jsonSchema.optional(),
  metadata: z.record(z.string(), jsonSchema).optional(),
});

const usageFiguresSchema = z.object({
  inputTokens: z.number().nonnegative(),
  outputTokens: z.number().nonnegative(),
  cachedInputTokens: z.number().nonnegative().optional(),
  cacheWriteTokens: z.number().nonnegative().optional(),
  reasoningTokens: z.number().nonnegative().optional(),
  costUsd: z.number().nonnegative().optional(),
});

export const usageSchema = usageFiguresSchema.extend({
  reused: usageFiguresSchema.optional(),
  carried: usageFiguresSchema.optional(),
});

/**
 * A usage's problems as `usageSchema` says them, or undefined when it has none. The common usage
 * (tokens, maybe a cost, nothing else) is checked without zod: it is checked on every attempt and
 * journal entry written, and a zod parse of this shape costs more than the rest of the check.
 *
 * @example checkUsage({ inputTokens: 10, outputTokens: 2 }) // undefined
 */
export function checkUsage(usage: unknown) {
  if (isPlainUsage(usage)) return undefined;
  const parsed = usageSchema.safeParse(usage);
  return parsed.success ? undefined : parsed;
}

/**
 * Whether a usage is the common one (tokens, maybe a cost, nothing else, as a plain object): one
 * `usageSchema` accepts and parses to an equal object.
 *
 * @example isPlainUsage({ inputTokens: 10, outputTokens: 2, costUsd: 0.1 }) // true
 */
export function isPlainUsage(usage: unknown): boolean {
  if (
    typeof usage !== "object" ||
    usage === null ||
    Object.getPrototypeOf(usage) !== Object.prototype
  ) {
    return false;
  }
  const u = usage as Record<string, unknown>;
  const count = (v: unknown) => typeof v === "number" && v >= 0 && Number.isFinite(v);
  const keys = Object.keys(u).length;
  if (!count(u.inputTokens) || !count(u.outputTokens)) return false;
  return u.costUsd === undefined ? keys === 2 : keys === 3 && count(u.costUsd);
}

/** The figures a usage's detail column holds besides its token and cost columns. */
export const usageDetailSchema = usageSchema.pick({
  cachedInputTokens: true,
  cacheWriteTokens: true,
  reasoningTokens: true,
  reused: true,
  carried: true,
});

export const scoreSchema = z.object({
  scorer: z.string(),
  value: z.number().min(0).max(1).nullable(),
  skipped: z.string().optional(),
  error: z.string().optional(),
  answer: z.string().optional(),
  explanation: z.string().optional(),
  metadata: z.record(z.string(), jsonSchema).optional(),
});

export const configurationFaultSchema = z.object({
  cause: z.enum(["connection-refused", "host-not-found", "http-status", "invalid-url"]),
  url: z.string(),
  status: z.number().int().optional(),
});

export const attemptErrorSchema = z.object({
  type: z.enum(["timeout", "provider", "solver", "scorer"]),
  message: z.string(),
  status: z.number().int().optional(),
  scorer: z.string().optional(),
  configuration: configurationFaultSchema.optional(),
});

export const provenanceSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("executed") }),
  z.object({ kind: z.literal("imported"), source: z.string() }),
]);

/** The names of the secrets an attempt's content held before they were redacted. */
export const redactedSchema = z.array(z.string().min(1)).min(1);

/** A count of re-sent model requests (AttemptDraft.retries). */
export const retriesSchema = z.number().int().nonnegative();

export const reducerSchema = z.union([
  z.enum(["mean", "max", "min", "mode"]),
  z.templateLiteral(["pass@", z.number().int().positive()]),
]);

export const runIdentitySchema = z.object({
  evalName: z.string(),
  solver: z.record(z.string(), jsonSchema),
  scorers: z.array(z.object({ name: z.string(), config: z.record(z.string(), jsonSchema) })),
  epochs: z.number().int().positive(),
  evalFileSha256: z.string().optional(),
  limits: sampleLimitsSchema.optional(),
});

export const runHistoryEntrySchema = z.object({
  at: z.string(),
  change: z.enum(["eval-changed", "rescored"]),
  differences: z.array(z.object({ field: z.string(), recorded: jsonSchema, current: jsonSchema })),
});

export const rerunRequestSchema = z.object({
  sampleId: z.string().min(1),
  epoch: z.number().int().positive(),
  after: z.number().int().nonnegative(),
});

export const runConfigSchema = z.object({
  evalName: z.string(),
  evalPath: z.string().optional(),
  output: z.string().optional(),
  model: z.string().optional(),
  epochs: z.number().int().positive(),
  concurrency: z.number().int().positive(),
  timeoutMs: z.number().int().positive().optional(),
  retries: z.number().int().nonnegative(),
  reducer: reducerSchema,
  limit: z.number().int().positive().optional(),
  maxCostUsd: z.number().positive().optional(),
  limits: sampleLimitsSchema.optional(),
  solver: z.record(z.string(), jsonSchema),
  scorers: z.array(z.string()),
  rescore: z
    .object({
      pass: z.string().min(1),
      scorers: z.array(z.string()),
      onlyErrors: z.boolean(),
      startedAt: z.string(),
    })
    .optional(),
  identity: runIdentitySchema.optional(),
  history: z.array(runHistoryEntrySchema).optional(),
  /** Executed by any number of workers over per-key leases (`stet run --distributed`). */
  distributed: z.literal(true).optional(),
  /** The benchmark the run was started in with other models' runs (`--model a --model b`). */
  benchmark: z.string().optional(),
  /** Started with `--reuse`: what was reused, from where, and why not the rest. */
  reuse: z
    .object({
      source: z.string().nullable(),
      requested: z.string(),
      reused: z.number().int().nonnegative(),
      rescored: z.number().int().nonnegative(),
      notReused: z.array(z.object({ reason: z.string(), keys: z.number().int().nonnegative() })),
      seeded: z.literal(true).optional(),
    })
    .optional(),
  /** The stamp of the dataset file the snapshot was read from (see RunConfig.datasetStamp). */
  datasetStamp: z.string().optional(),
  /** A dataset run's eval, rebuilt from this on resume (`stet run --dataset`). */
  datasetEval: z
    .object({
      dataset: z.string(),
      model: z.string(),
      scorers: z.array(z.string()),
      system: z.string().optional(),
    })
    .optional(),
});

export const runStatusSchema = z.enum(["running", "interrupted", "completed", "errored"]);
