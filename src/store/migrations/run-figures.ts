import type { Migration } from "./types.js";

/**
 * SQLite migration 16 (PostgreSQL 15): the per-run figures a report reads instead of every
 * attempt (`core/run-figures.ts`), kept up to date in each commit's transaction. `run_figures`
 * holds a run's exact sums as JSON; `sample_figures` each sample's keys' outcomes (what a sample
 * adds to the sums, and what a scoring or a changed sample swaps out), with how many of them are
 * errors, indexed for the report's error examples. A run stored before this migration has no
 * `run_figures` row: its figures are built from its attempts by the first read that needs them
 * (`readFigures`), and until then commits leave them alone.
 */
export function runFiguresMigration(
  version: number,
  textType: string,
  /** SQLite's `WITHOUT ROWID`: a sample's row is written with one b-tree, its key's. */
  tableOptions = "",
): Migration {
  return {
    version,
    name: "run-figures",
    sql: `
CREATE TABLE run_figures (
  run_id ${textType} PRIMARY KEY,
  figures TEXT NOT NULL
);
CREATE TABLE sample_figures (
  run_id ${textType} NOT NULL,
  sample_id ${textType} NOT NULL,
  figures TEXT NOT NULL,
  errored INTEGER NOT NULL,
  PRIMARY KEY (run_id, sample_id)
)${tableOptions};
CREATE INDEX sample_figures_errored ON sample_figures (run_id, sample_id) WHERE errored > 0;
`,
  };
}
