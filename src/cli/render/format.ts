import type { UsageTotal } from "../../core/aggregate.js";
import { formatUsd } from "../../core/money.js";

/** Small formatting helpers shared by the CLI's renderers. */

export { formatUsd };

/**
 * A total's cost as the terminal shows it: dollars when every attempt that used tokens was priced,
 * "≥ $x" when some were not (what the priced ones cost is a lower bound), "unknown" when nothing
 * is known; with `counted`, how many attempts had no price. Never "$0" for an unpriced total.
 *
 * @example formatCost({ costUsd: 0.25, unpriced: 3 }, true) // "≥ $0.2500 (3 attempts unpriced)"
 * @example formatCost({ costUsd: null, unpriced: 1 }) // "unknown"
 */
export function formatCost(
  total: Pick<UsageTotal, "costUsd" | "unpriced">,
  counted = false,
): string {
  const note =
    counted && total.unpriced > 0
      ? ` (${formatCount(total.unpriced)} attempt${total.unpriced === 1 ? "" : "s"} unpriced)`
      : "";
  if (total.costUsd === null) return `unknown${note}`;
  return `${total.unpriced > 0 ? "≥ " : ""}${formatUsd(total.costUsd)}${note}`;
}

/**
 * A total's tokens: input (with its cached reads and cache writes, when any) and output (with its
 * reasoning tokens, when any); the parts are of the whole, not added to it.
 *
 * @example formatTokens({ inputTokens: 1000, cachedInputTokens: 800, cacheWriteTokens: 0, outputTokens: 100, reasoningTokens: 40 })
 * // "1,000 in (800 cached) · 100 out (40 reasoning)"
 */
export function formatTokens(
  total: Pick<
    UsageTotal,
    "inputTokens" | "outputTokens" | "cachedInputTokens" | "cacheWriteTokens" | "reasoningTokens"
  >,
): string {
  const input = [
    total.cachedInputTokens > 0 ? `${formatCount(total.cachedInputTokens)} cached` : "",
    total.cacheWriteTokens > 0 ? `${formatCount(total.cacheWriteTokens)} cache writes` : "",
  ].filter(Boolean);
  const of = (parts: string[]) => (parts.length > 0 ? ` (${parts.join(", ")})` : "");
  const reasoning =
    total.reasoningTokens > 0 ? [`${formatCount(total.reasoningTokens)} reasoning`] : [];
  return (
    `${formatCount(total.inputTokens)} in${of(input)} · ` +
    `${formatCount(total.outputTokens)} out${of(reasoning)}`
  );
}

export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  const s = ms / 1_000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${Math.round(s % 60)}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

/** 12345 → "12,345". (Not toLocaleString: initialising Intl costs start-up time.) */
export function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Left-aligned text columns, right-aligned numeric ones; the header row is the first row. */
export function table(
  rows: readonly (readonly string[])[],
  numeric: readonly boolean[] = [],
): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, c) => (numeric[c] ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** A key as the terminal shows it: the sample id, with `#epoch` from the second epoch on. */
export function formatKey(key: { sampleId: string; epoch: number }): string {
  return key.epoch > 1 ? `${key.sampleId}#${key.epoch}` : key.sampleId;
}
