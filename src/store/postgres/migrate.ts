import type { Pool, PoolClient } from "pg";
import { refuseNewerSchema } from "../migrations/newer-schema.js";
import { POSTGRES_MIGRATIONS } from "../migrations/postgres.js";
import type { Migration, MigrationResult } from "../migrations/types.js";
import { transaction } from "./driver.js";

/**
 * Applies the migrations not yet recorded in `schema_migrations`, all in one transaction
 * (PostgreSQL's DDL is transactional), and reports what it did. `schema`, when given, is created
 * first; the pool's connections must have it as their `search_path`. Concurrent callers on the
 * same schema queue on an advisory lock, so exactly one creates it and applies each step (a bare
 * `CREATE SCHEMA IF NOT EXISTS` is not safe against a concurrent one); running it again is
 * harmless.
 *
 * @example await migratePostgres(pool, { schema: "stet" }); // [{ version: 1, ... "applied" }]
 */
export async function migratePostgres(
  pool: Pool,
  options: { schema?: string; migrations?: readonly Migration[] } = {},
): Promise<MigrationResult[]> {
  return transaction(pool, (tx) => migratePostgresIn(tx, options));
}

/**
 * `migratePostgres`'s work on a client already inside a transaction (the caller commits): so a
 * restore can create the schema, fill it and migrate it forward as one all-or-nothing step.
 * `migrations` may stop short of the last one (a restore first builds the backup's version).
 *
 * @example await transaction(pool, (tx) => migratePostgresIn(tx, { schema: "stet" }));
 */
export async function migratePostgresIn(
  tx: PoolClient,
  options: { schema?: string; migrations?: readonly Migration[] } = {},
): Promise<MigrationResult[]> {
  const { schema, migrations = POSTGRES_MIGRATIONS } = options;
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtext('stet migrations ' || COALESCE($1, current_schema())))`,
    [schema ?? null],
  );
  if (schema !== undefined) await tx.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await tx.query(
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       version INTEGER PRIMARY KEY,
       name TEXT NOT NULL,
       applied_at TEXT NOT NULL
     )`,
  );
  const { rows } = await tx.query<{ version: number }>("SELECT version FROM schema_migrations");
  const applied = new Set(rows.map((r) => r.version));
  refuseNewerSchema(Math.max(0, ...applied), migrations);
  const results: MigrationResult[] = [];
  for (const { version, name, sql } of migrations) {
    if (applied.has(version)) {
      results.push({ version, name, status: "already-applied" });
      continue;
    }
    await tx.query(sql);
    await tx.query(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
      [version, name, new Date().toISOString()],
    );
    results.push({ version, name, status: "applied" });
  }
  return results;
}
