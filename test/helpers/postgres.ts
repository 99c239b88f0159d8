import { randomBytes } from "node:crypto";
import pg from "pg";
import { onTestFinished } from "vitest";

/**
 * The PostgreSQL the tests use: STET_TEST_POSTGRES, else the local server `.ci/run` starts
 * (trust auth, user postgres, database test). Each test gets a schema of its own.
 */
export const TEST_POSTGRES_URL =
  process.env.STET_TEST_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test";

/** STET_SKIP_POSTGRES=1 skips the PostgreSQL tests on a machine without a server; CI never sets it. */
export const SKIP_POSTGRES = process.env.STET_SKIP_POSTGRES === "1";

/**
 * A fresh schema name, and a function that drops the schema with everything in it.
 *
 * @example const { schema, drop } = testSchema(); onTestFinished(drop);
 */
export function testSchema(): { schema: string; drop: () => Promise<void> } {
  const schema = `stet_test_${randomBytes(6).toString("hex")}`;
  return {
    schema,
    drop: async () => {
      const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A fresh schema of the test PostgreSQL, dropped when the test finishes: its store URL for the
 * CLI (`url`, with `?schema=`) and a pool the test reads it with (`db`, on that search path).
 *
 * @example const { url, db } = testSchemaPool(); await db.query("SELECT * FROM attempts");
 */
export function testSchemaPool(): { url: string; db: pg.Pool } {
  const { schema, drop } = testSchema();
  const db = new pg.Pool({
    connectionString: TEST_POSTGRES_URL,
    options: `-c search_path=${schema}`,
  });
  onTestFinished(async () => {
    await db.end();
    await drop();
  });
  const url = new URL(TEST_POSTGRES_URL);
  url.searchParams.set("schema", schema);
  return { url: url.toString(), db };
}
