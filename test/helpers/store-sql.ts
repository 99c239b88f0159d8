import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import { testSchemaPool } from "./postgres.js";

export type StoreKind = "sqlite" | "postgres";

/** A test's store as SQL reads it directly, never through stet, and where the CLI finds it. */
export interface StoreSql {
  kind: StoreKind;
  /** What `STET_STORE` names: the SQLite file, or the PostgreSQL URL with its own schema. */
  location: string;
  /** The column that puts a run's attempts in commit order: SQLite's rowid, PostgreSQL's seq. */
  order: string;
  /**
   * The rows of one query (the same SQL on both: standard SQL, window functions included); none
   * while stet has not created its tables yet.
   */
  rows<T>(sql: string): Promise<T[]>;
}

/**
 * A store for a test: a SQLite file (read-only connections per query; no rows before the file
 * exists), or a fresh PostgreSQL schema dropped when the test finishes.
 *
 * @example const db = storeSql("postgres", join(dir, ".stet/stet.db")); await db.rows("SELECT 1");
 */
export function storeSql(kind: StoreKind, sqliteFile: string): StoreSql {
  if (kind === "postgres") {
    const { url, db } = testSchemaPool();
    return {
      kind,
      location: url,
      order: "seq",
      rows: async <T>(sql: string) => {
        try {
          return (await db.query(sql)).rows as T[];
        } catch (error) {
          if ((error as { code?: string }).code === "42P01") return []; // undefined_table
          throw error;
        }
      },
    };
  }
  return {
    kind,
    location: sqliteFile,
    order: "rowid",
    rows: async <T>(sql: string) => {
      if (!existsSync(sqliteFile)) return [];
      const conn = new Database(sqliteFile, { readonly: true, fileMustExist: true });
      try {
        return conn.prepare(sql).all() as T[];
      } catch (error) {
        if (/no such table/.test(String(error))) return [];
        throw error;
      } finally {
        conn.close();
      }
    },
  };
}
