import type { Json } from "../core/json.js";
import type { CsvColumn } from "./export-csv.js";

/** A review as `applyReviews`' `reviewsOf` writes it. */
interface ExportedReview {
  scorer: string;
  reviewer: string;
  value: number;
}

/** Review columns get keys of their own, so a human scorer cannot replace another column. */
const reviewKey = (scorer: string) => `review:${scorer}`;

/** The human scorers reviewed in any row, sorted: one CSV column each. */
export function reviewScorers(rows: readonly (Json[] | undefined)[]): string[] {
  const names = new Set<string>();
  for (const row of rows) for (const r of asReviews(row)) names.add(r.scorer);
  return [...names].sort();
}

/**
 * The CSV export's review columns, after the others and only when the run has reviews: one per
 * human scorer (its key's value, the mean of its reviewers'), then `reviewers` (who, `;` apart).
 *
 * @example reviewColumns(["human"]).map((c) => c.header) // ["human", "reviewers"]
 */
export function reviewColumns(humans: readonly string[]): CsvColumn[] {
  if (humans.length === 0) return [];
  return [
    ...humans.map((h) => ({ key: reviewKey(h), header: h })),
    { key: "reviewers", header: "reviewers" },
  ];
}

/** A row's review cells: empty where the key has no review of that scorer. */
export function reviewCells(
  humans: readonly string[],
  row: Json[] | undefined,
): Record<string, string | number> {
  if (humans.length === 0) return {};
  const reviews = asReviews(row);
  const cells: Record<string, string | number> = {};
  for (const h of humans) {
    const of = reviews.filter((r) => r.scorer === h);
    cells[reviewKey(h)] = of.length === 0 ? "" : of.reduce((s, r) => s + r.value, 0) / of.length;
  }
  cells.reviewers = [...new Set(reviews.map((r) => r.reviewer))].join(";");
  return cells;
}

function asReviews(row: Json[] | undefined): ExportedReview[] {
  return (row ?? []) as unknown as ExportedReview[];
}
