import type { Migration } from "./types.js";

/**
 * SQLite migration 18 (PostgreSQL 17): a chat step's input stored as the messages its
 * conversation added since the key's previous chat step (`StepDraft.inputPrefix`): which step's
 * conversation it continues, and with how many of its messages. Null for an input stored whole,
 * as every entry written before this migration is. Adding nullable columns rewrites no row.
 */
export function journalPrefixMigration(version: number): Migration {
  return {
    version,
    name: "journal-input-prefix",
    sql: `
ALTER TABLE journal ADD COLUMN prefix_step INTEGER;
ALTER TABLE journal ADD COLUMN prefix_count INTEGER;
`,
  };
}
