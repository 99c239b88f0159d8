import Database from "better-sqlite3";

/**
 * Every row of every table of a SQLite store, as one JSON string: equal dumps mean the store
 * did not change. Read through a separate read-only connection.
 *
 * @example expect(dumpDb(path)).toBe(before);
 */
export function dumpDb(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all() as { name: string }[];
    const dump: Record<string, string[]> = {};
    for (const { name } of tables) {
      // Some tables are WITHOUT ROWID: order the rows by their JSON instead.
      const rows = db.prepare(`SELECT * FROM "${name}"`).all();
      dump[name] = rows.map((row) => JSON.stringify(row)).sort();
    }
    return JSON.stringify(dump);
  } finally {
    db.close();
  }
}
