import { resolve } from "node:path";
import { StetError } from "../core/errors.js";
import { openSqliteStore } from "../store/sqlite.js";
import type { Store } from "../store/types.js";
import { isPostgresUrl, storeLocation } from "./store-location.js";

export { isPostgresUrl, storeLocation } from "./store-location.js";

/**
 * Opens the store the user selected (`storeLocation`, which refuses an empty location or a URL
 * that is not PostgreSQL's). The composition root: the only place that picks an adapter.
 * A `postgres://` URL may name the schema for stet's tables with `?schema=name`; the PostgreSQL
 * driver loads only for such a URL. Commands that only read pass `create: false`: then a missing
 * or empty SQLite file, or a database without stet's tables, is refused instead of made a store.
 */
export async function openStore(
  flag: string | undefined,
  options: { create?: boolean } = {},
): Promise<Store> {
  const location = storeLocation(flag);
  const create = options.create ?? true;
  if (isPostgresUrl(location)) {
    const { openPostgresStore } = await import("../store/postgres.js");
    const { url, schema } = splitSchema(location);
    return openPostgresStore(url, { ...(schema === undefined ? {} : { schema }), create });
  }
  // The adapter's errors name the file (resolved, so it can be found whatever the cwd).
  return openSqliteStore(resolve(location), { create });
}

/**
 * Takes stet's own `schema` parameter off a PostgreSQL URL; the rest goes to the driver.
 *
 * @example splitSchema("postgres://db/evals?schema=stet") // { url: "postgres://db/evals", schema: "stet" }
 */
export function splitSchema(location: string): { url: string; schema?: string } {
  let parsed: URL;
  try {
    parsed = new URL(location);
  } catch {
    throw new StetError("E_CONFIG", "the --store URL is not a valid postgres:// URL");
  }
  const schema = parsed.searchParams.get("schema") ?? undefined;
  if (schema === undefined) return { url: location };
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema };
}
