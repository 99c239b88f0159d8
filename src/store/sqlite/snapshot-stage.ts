import type { SampleRecord } from "../../core/types.js";
import { firstRepeat } from "../snapshot-pages.js";
import type { SqliteDatabase } from "./driver.js";
import { ROWS_PER_STATEMENT, rowWriter, valuesRows } from "./statements.js";

/** A paged snapshot staged on the connection until the run is written from it (`openStage`). */
export interface SnapshotStage {
  /** How many samples are staged. */
  readonly count: number;
  /** Stages a page after those before it; E_DUPLICATE_ID (nothing of the page staged) on a repeat. */
  add(page: readonly SampleRecord[]): void;
  /** Writes the staged samples as the run's snapshot, in the order they came; inside the run's transaction. */
  copyInto(runId: string): void;
  /** Drops the stage. */
  drop(): void;
}

/**
 * Opens a stage for a run's paged snapshot: a TEMP table, private to the connection and in a
 * temporary file that SQLite deletes as it opens it (`temp_store = FILE`, see open.ts), so a
 * killed process leaves nothing behind and no reader ever sees it. Each page is written in its
 * own short transaction on the temp database alone, between the awaits of the pages: no
 * transaction on the main database stays open while the caller reads its next page, so another
 * run's commit on this connection never joins one. `name` must be unique on the connection (two
 * runs may stage at once).
 *
 * @example const stage = openStage(db, "stet_snapshot_stage_1"); stage.add(page); stage.drop();
 */
export function openStage(db: SqliteDatabase, name: string): SnapshotStage {
  const table = `temp.${name}`;
  db.exec(`CREATE TABLE ${table} (seq INTEGER PRIMARY KEY, sample_id TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL, sample TEXT NOT NULL)`);
  const columns = "(seq, sample_id, fingerprint, sample)";
  const one = db.prepare(`INSERT INTO ${table} ${columns} VALUES ${valuesRows(4, 1)}`);
  const many = db.prepare(
    `INSERT INTO ${table} ${columns} VALUES ${valuesRows(4, ROWS_PER_STATEMENT)}`,
  );
  const seqOf = db.prepare<{ seq: number }>(`SELECT seq FROM ${table} WHERE sample_id = ?`);
  let count = 0;
  return {
    get count() {
      return count;
    },
    add(page) {
      db.exec("BEGIN");
      try {
        const rows = rowWriter(one, many, 4);
        let seq = count;
        for (const { sample, fingerprint } of page) {
          rows.push(seq++, sample.id, fingerprint, JSON.stringify(sample));
        }
        rows.end();
        db.exec("COMMIT");
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK");
        // The stage's UNIQUE refused a repeated id: with the page rolled back, name it and
        // both its positions (the earlier one staged, or in this page).
        if (isUniqueViolation(error))
          throw firstRepeat(page, count, (id) => seqOf.get(id)?.seq) ?? error;
        throw error;
      }
      count += page.length;
    },
    copyInto(runId) {
      db.prepare(
        `INSERT INTO samples (run_id, sample_id, fingerprint, sample)
           SELECT ?, sample_id, fingerprint, sample FROM ${table} ORDER BY seq`,
      ).run(runId);
    },
    drop() {
      db.exec(`DROP TABLE IF EXISTS ${table}`);
    },
  };
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "SQLITE_CONSTRAINT_UNIQUE";
}
