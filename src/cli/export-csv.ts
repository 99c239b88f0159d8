import type { Attempt, SampleRecord } from "../core/types.js";
import { trajectoryUsage } from "../core/usage.js";

/** One CSV column: `key` in the row objects, `header` as the spreadsheet shows it. */
export interface CsvColumn {
  key: string;
  header: string;
}

const BEFORE_SCORES = ["sampleId", "epoch", "status", "input", "target", "output"];
const AFTER_SCORES = [
  "error",
  "inputTokens",
  "outputTokens",
  "costUsd",
  "startedAt",
  "completedAt",
  "durationMs",
  "retries",
  "cachedInputTokens",
  "cacheWriteTokens",
  "reasoningTokens",
  "reusedCostUsd",
  "limit",
  "limitValue",
  "limitUsed",
];
/** Score columns get keys of their own, so a scorer named `status` cannot replace a column. */
const scoreKey = (scorer: string) => `score:${scorer}`;

/**
 * The columns of `stet export --format csv`, in a stable order: the key, what went in (the
 * sample's input and target) and came out, one column per scorer of the run's config (its score's
 * value), then error, tokens, cost, timing, the attempt's retries (re-sent model requests), and
 * its cached, cache-write and reasoning tokens and the cost of its replayed calls (of the totals),
 * and the per-sample limit that ended it (limit, limitValue, limitUsed; empty when none did).
 *
 * @example csvColumns(["exact"]).map((c) => c.header)
 * // ["sampleId", "epoch", "status", "input", "target", "output", "exact", "error", "inputTokens", …]
 */
export function csvColumns(scorers: readonly string[]): CsvColumn[] {
  const named = (names: readonly string[]) => names.map((name) => ({ key: name, header: name }));
  return [
    ...named(BEFORE_SCORES),
    ...[...new Set(scorers)].map((name) => ({ key: scoreKey(name), header: name })),
    ...named(AFTER_SCORES),
  ];
}

/**
 * One outcome as a CSV row: strings stay plain, numbers stay numbers, anything else (chat
 * messages, objects, booleans) is JSON text; absent values are empty cells. The input and target
 * come from the run's sample snapshot (`samples`, by sample id).
 */
export function csvRow(
  a: Attempt,
  samples: ReadonlyMap<string, SampleRecord>,
  scorers: readonly string[],
): Record<string, string | number> {
  const sample = samples.get(a.sampleId)?.sample;
  // The whole trajectory: calls carried from an errored attempt of the key count as replayed.
  const usage = a.usage && trajectoryUsage(a.usage);
  const row: Record<string, string | number> = {
    sampleId: a.sampleId,
    epoch: a.epoch,
    status: a.status,
    input: cell(sample?.input),
    target: cell(sample?.target),
    output: cell(a.output),
    error: cell(a.error),
    inputTokens: cell(usage?.inputTokens),
    outputTokens: cell(usage?.outputTokens),
    costUsd: cell(usage?.costUsd),
    startedAt: a.startedAt,
    completedAt: a.completedAt,
    durationMs: a.durationMs,
    // Empty when unknown (stored before retries were counted).
    retries: cell(a.retries),
    // Of inputTokens and outputTokens: empty when the provider did not report them.
    cachedInputTokens: cell(usage?.cachedInputTokens),
    cacheWriteTokens: cell(usage?.cacheWriteTokens),
    reasoningTokens: cell(usage?.reasoningTokens),
    // Of costUsd, what calls replayed from the journal cost (bought by an interrupted execution,
    // or by an errored attempt of the key).
    reusedCostUsd: cell(usage?.reused?.costUsd),
    // Empty unless a per-sample limit ended the attempt: which one, its value, what was used.
    limit: cell(a.limit?.limit),
    limitValue: cell(a.limit?.value),
    limitUsed: cell(a.limit?.used),
  };
  for (const name of scorers) {
    row[scoreKey(name)] = cell(a.scores.find((s) => s.scorer === name)?.value);
  }
  return row;
}

function cell(value: unknown): string | number {
  if (value === undefined || value === null) return "";
  if (typeof value === "string" || typeof value === "number") return value;
  return JSON.stringify(value);
}
