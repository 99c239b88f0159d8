import { SQLITE_MIGRATIONS } from "../migrations/sqlite.js";
import { refuseNewerSchema } from "../migrations/newer-schema.js";
import type { Migration, MigrationResult } from "../migrations/types.js";
import { immediate, type SqliteDatabase } from "./driver.js";

/**
 * Applies the migrations not yet recorded in `schema_migrations`, each in its own transaction,
 * and reports what it did. Running it again is harmless: everything comes back already-applied.
 *
 * @example migrateSqlite(db).filter((m) => m.status === "applied")
 */
export function migrateSqlite(
  db: SqliteDatabase,
  migrations: readonly Migration[] = SQLITE_MIGRATIONS,
): MigrationResult[] {
  db.exec(
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       version INTEGER PRIMARY KEY,
       name TEXT NOT NULL,
       applied_at TEXT NOT NULL
     )`,
  );
  const isApplied = db.prepare<{ version: number }>(
    "SELECT version FROM schema_migrations WHERE version = ?",
  );
  const record = db.prepare(
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
  );
  const latest = db.prepare<{ version: number | null }>(
    "SELECT MAX(version) AS version FROM schema_migrations",
  );
  refuseNewerSchema(latest.get()?.version ?? 0, migrations);

  return migrations.map(({ version, name, sql }) => {
    if (isApplied.get(version)) return { version, name, status: "already-applied" };
    // Another process may be migrating the same fresh file: the re-check under the write lock
    // makes exactly one of them apply each migration.
    const applied = immediate(db, () => {
      if (isApplied.get(version)) return false;
      db.exec(sql);
      record.run(version, name, new Date().toISOString());
      return true;
    });
    return { version, name, status: applied ? "applied" : "already-applied" };
  });
}
