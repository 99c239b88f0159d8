import type pg from "pg";

/**
 * Every row of every table of the pool's schema (its search path), as one JSON string: equal
 * dumps mean the store did not change (`dumpDb` for PostgreSQL).
 *
 * @example expect(await dumpPg(db)).toBe(before);
 */
export async function dumpPg(db: pg.Pool): Promise<string> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const dump: Record<string, string[]> = {};
  for (const { name } of tables) {
    const { rows } = await db.query(`SELECT * FROM "${name}"`);
    dump[name] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return JSON.stringify(dump);
}
