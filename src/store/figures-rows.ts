import * as z from "zod";
import { ERROR_EXAMPLES, type FoldedAttempt } from "../core/outcome-fold.js";
import {
  RunFigures,
  sampleFiguresOf,
  withAttempt,
  type ErrorExamples,
  type RunFiguresJson,
  type SampleFigures,
} from "../core/run-figures.js";
import { LIMIT_NAMES, type LimitName } from "../core/limits.js";
import { attemptErrorSchema, reducerSchema, retriesSchema, usageSchema } from "../core/schemas.js";
import type { AttemptErrorType, Key } from "../core/types.js";
import { parseColumn } from "./rows.js";

const count = z.number().int();
const limitNameSchema = z.enum(LIMIT_NAMES as [LimitName, ...LimitName[]]);
const errorTypeSchema = attemptErrorSchema.shape.type;
const exactSchema = z.string().regex(/^(0|-?[0-9a-f]+p-?\d+)$/);

const keyFiguresSchema = z.object({
  attempt: count,
  status: z.enum(["scored", "error"]),
  error: z.object({ type: errorTypeSchema, message: z.string() }).optional(),
  limit: limitNameSchema.optional(),
  imported: z.object({ usage: usageSchema.nullable() }).optional(),
  values: z.array(z.tuple([z.string(), z.number()])).optional(),
});

const sampleFiguresSchema = z.record(z.string().regex(/^\d+$/), keyFiguresSchema);

const usageSumSchema = z.object({
  attempts: count,
  inputTokens: z.number(),
  outputTokens: z.number(),
  cachedInputTokens: z.number(),
  cacheWriteTokens: z.number(),
  reasoningTokens: z.number(),
  unpriced: count,
  cost: exactSchema,
});

const runFiguresSchema = z.object({
  reducer: reducerSchema,
  scored: count,
  errored: count,
  limited: count,
  limitedBy: z.partialRecord(limitNameSchema, count),
  errorsByType: z.partialRecord(errorTypeSchema, count),
  reused: usageSumSchema,
  spent: usageSumSchema,
  retries: z.object({ total: retriesSchema, keysRetried: count, unrecorded: count }),
  scorers: z.array(
    z.object({
      name: z.string(),
      n: count,
      sum: exactSchema,
      squares: exactSchema,
      bins: z.array(count),
    }),
  ),
});

/** A `run_figures` row's column, parsed. */
export function parseRunFigures(text: string): RunFigures {
  return RunFigures.parse(parseColumn(runFiguresSchema, text, "run figures") as RunFiguresJson);
}

/** A `sample_figures` row's column, parsed. */
export function parseSampleFigures(text: string): SampleFigures {
  return parseColumn(sampleFiguresSchema, text, "sample figures") as SampleFigures;
}

/** How many of a sample's keys are errors (the column the error examples are read by). */
export function erroredKeys(sample: SampleFigures): number {
  return Object.values(sample).filter((k) => k.status === "error").length;
}

/** A sample as the figures update reads it: its current fingerprint and its stored figures. */
export interface SampleBefore {
  fingerprint: string;
  figures: SampleFigures | undefined;
}

/**
 * Applies a committed batch of attempts to the run's figures (in place) and returns the samples
 * whose figures changed, with their new figures: what the commit's transaction writes. Each
 * attempt is taken from the draft in hand (`withAttempt`), so no attempt row is read.
 */
export function applyAttempts(
  run: RunFigures,
  before: ReadonlyMap<string, SampleBefore>,
  attempts: readonly FoldedAttempt[],
): Map<string, SampleFigures> {
  const after = new Map<string, SampleFigures>();
  for (const attempt of attempts) {
    run.addAttempt(attempt);
    const sample = before.get(attempt.sampleId);
    if (!sample) continue;
    const held = after.get(attempt.sampleId) ?? sample.figures;
    const next = withAttempt(held, attempt, sample.fingerprint);
    if (next !== held) after.set(attempt.sampleId, next);
  }
  for (const [sampleId, next] of after) swap(run, before.get(sampleId)?.figures, next);
  return after;
}

/** A sample's contribution replaced by its new one. */
export function swap(
  run: RunFigures,
  before: SampleFigures | undefined,
  after: SampleFigures,
): void {
  if (before) run.addSample(before, -1);
  run.addSample(after, 1);
}

/**
 * A sample's figures recomputed from its attempts as they read now (after a scoring, or when its
 * fingerprint changed), swapped into the run's figures; returns them.
 */
export function recomputeSample(
  run: RunFigures,
  before: SampleFigures | undefined,
  attempts: readonly FoldedAttempt[],
  fingerprint: string,
): SampleFigures {
  const after = sampleFiguresOf(attempts, fingerprint);
  swap(run, before, after);
  return after;
}

/**
 * A run's figures built from every stored attempt (as they read now, in key order) and scoring:
 * what a store keeps for a run it holds no figures for yet (one stored before migration 17).
 */
export function buildFigures(
  reducer: RunFiguresJson["reducer"],
  fingerprints: ReadonlyMap<string, string>,
  attempts: Iterable<FoldedAttempt>,
  scorings: Iterable<{ usage: FoldedAttempt["usage"]; retries?: number | null }>,
): { run: RunFigures; samples: Map<string, SampleFigures> } {
  const run = new RunFigures(reducer);
  const samples = new Map<string, SampleFigures>();
  let held: FoldedAttempt[] = [];
  const close = () => {
    const first = held[0];
    const fingerprint = first && fingerprints.get(first.sampleId);
    if (first && fingerprint !== undefined) {
      const figures = sampleFiguresOf(held, fingerprint);
      run.addSample(figures, 1);
      samples.set(first.sampleId, figures);
    }
    held = [];
  };
  for (const attempt of attempts) {
    run.addAttempt(attempt);
    if (held[0] && held[0].sampleId !== attempt.sampleId) close();
    held.push(attempt);
  }
  close();
  for (const scoring of scorings) run.addScoring(scoring);
  return { run, samples };
}

/**
 * Collects the examples from the errored samples' figures read in key order, and says when it has
 * all it needs (every type with `ERROR_EXAMPLES`, or all of its errors), so the read can stop.
 */
export class ExampleCollector {
  readonly examples: ErrorExamples = {};
  #missing: number;
  readonly #wanted: Partial<Record<AttemptErrorType, number>>;

  constructor(counts: Partial<Record<AttemptErrorType, number>>) {
    this.#wanted = Object.fromEntries(
      Object.entries(counts).map(([type, n]) => [type, Math.min(n, ERROR_EXAMPLES)]),
    );
    this.#missing = Object.values(this.#wanted).reduce((a, b) => a + b, 0);
  }

  get done(): boolean {
    return this.#missing === 0;
  }

  add(sampleId: string, figures: SampleFigures): void {
    const epochs = Object.keys(figures)
      .map(Number)
      .sort((a, b) => a - b);
    for (const epoch of epochs) {
      const error = figures[epoch]!.error;
      if (figures[epoch]!.status !== "error" || !error) continue;
      const list = (this.examples[error.type] ??= []);
      if (list.length >= (this.#wanted[error.type] ?? 0)) continue;
      list.push({ sampleId, epoch, message: error.message });
      this.#missing--;
    }
  }
}

/** The figures a store hands a report: the run's sums, its error examples, some keys' outcomes. */
export interface StoredFiguresRead {
  figures: RunFigures;
  examples: ErrorExamples;
  /** The outcome of each key asked for (undefined: none yet), in the order asked. */
  keys: (SampleFigures[string] | undefined)[];
}

/** The keys asked for, looked up in their samples' figures. */
export function keysOf(
  keys: readonly Key[],
  samples: ReadonlyMap<string, SampleFigures>,
): StoredFiguresRead["keys"] {
  return keys.map((k) => samples.get(k.sampleId)?.[k.epoch]);
}
