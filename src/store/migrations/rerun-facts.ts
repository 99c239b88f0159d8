import { rebuildRerunFactsSql } from "../rerun-facts.js";
import type { Migration } from "./types.js";

/**
 * SQLite migration 21 (PostgreSQL 20): the counts of each run's open re-run requests by what
 * places their keys in a plan (`store/rerun-facts.ts`), kept by every write that moves one, so a
 * report reads a few rows instead of recomputing every open request. Each request row gets the
 * fact it is counted under; the facts and counts of the requests stored before are computed here.
 */
export function rerunFactsMigration(version: number, dialect: "sqlite" | "postgres"): Migration {
  const key = dialect === "sqlite" ? "TEXT" : 'TEXT COLLATE "C"';
  return {
    version,
    name: "rerun-facts",
    sql: `
ALTER TABLE rerun_requests ADD COLUMN fact TEXT;
CREATE TABLE rerun_counts (
  run_id ${key} NOT NULL,
  fact TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (run_id, fact)
)${dialect === "sqlite" ? " WITHOUT ROWID" : ""};
${Object.values(rebuildRerunFactsSql(dialect, "all")).join(";\n")};
`,
  };
}
