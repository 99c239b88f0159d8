import { resolve } from "node:path";
import { isStetError, StetError } from "../core/errors.js";
import { DEFAULT_STALE_MS } from "../runs/stale-limit.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/types.js";
import { splitSchema as splitUrlSchema } from "../store/postgres/schema-url.js";
import { isPostgresUrl, storeLocation } from "./store-location.js";

export { isPostgresUrl, storeLocation } from "./store-location.js";

/**
 * Opens the store the user selected (`storeLocation`, which refuses an empty location or a URL
 * that is not PostgreSQL's). The composition root: the only place that picks an adapter.
 * A `postgres://` URL may name the schema for stet's tables with `?schema=name`; the PostgreSQL
 * driver loads only for such a URL; its sessions are ended by the server after half the stale
 * limit (1–10 s) idle inside a transaction, so a frozen process never holds a run's row lock
 * until a takeover. Commands that only read pass `create: false`: then a missing or empty
 * SQLite file, or a database without stet's tables, is refused instead of made a store.
 */
export async function openStore(
  flag: string | undefined,
  options: { create?: boolean; staleMs?: number } = {},
): Promise<Store> {
  const location = storeLocation(flag);
  const create = options.create ?? true;
  if (isPostgresUrl(location)) {
    const { openPostgresStore } = await import("../store/postgres/index.js");
    const { url, schema } = splitSchema(location);
    const idleInTransactionTimeoutMs = idleInTransactionLimit(options.staleMs ?? DEFAULT_STALE_MS);
    return openPostgresStore(url, {
      idleInTransactionTimeoutMs,
      create,
      ...(schema === undefined ? {} : { schema }),
    });
  }
  // The adapter's errors name the file (resolved, so it can be found whatever the cwd).
  return openSqliteStore(resolve(location), { create });
}

/**
 * The store, open, when it exists and holds run `runId`; else `undefined`, with nothing created
 * or left open: a missing or empty SQLite file, or a database without stet's tables, holds no
 * run. `stet run --run-id` looks the id up with it before the eval and its dataset load (a run
 * that exists goes the resume way, which loads them itself). The caller closes the store it gets.
 *
 * @example const store = await openStoreWithRun(flags.store, "nightly-7", { staleMs: 30_000 });
 */
export async function openStoreWithRun(
  flag: string | undefined,
  runId: string,
  options: { staleMs?: number } = {},
): Promise<Store | undefined> {
  let store: Store | undefined;
  try {
    store = await openStore(flag, { ...options, create: false });
    // PostgreSQL connects (and finds no tables) on the first read.
    if (await store.runs.get(runId)) return store;
  } catch (error) {
    if (!isNoStoreYet(error)) {
      await store?.close();
      throw error;
    }
  }
  await store?.close();
  return undefined;
}

/** The refusal of a read-only open where no store was made yet (`notAStore`, or no tables). */
function isNoStoreYet(error: unknown): boolean {
  const state = isStetError(error, "E_STORE") ? error.details?.state : undefined;
  return state === "missing" || state === "empty";
}

/**
 * How long a PostgreSQL session of stet's may sit idle inside a transaction: half the stale
 * limit, between 1 s and 10 s. Its own transactions take milliseconds; a session idle longer is
 * a frozen or stalled process, and a takeover comes only after the full stale limit.
 *
 * @example idleInTransactionLimit(30_000) // 10_000
 */
export function idleInTransactionLimit(staleMs: number): number {
  return Math.min(10_000, Math.max(1_000, Math.floor(staleMs / 2)));
}

/**
 * Takes stet's own `schema` parameter off a PostgreSQL URL; the rest goes to the driver. Refuses
 * a text that is not a URL with `E_CONFIG`.
 *
 * @example splitSchema("postgres://db/evals?schema=stet") // { url: "postgres://db/evals", schema: "stet" }
 */
export function splitSchema(location: string): { url: string; schema?: string } {
  if (!URL.canParse(location)) {
    throw new StetError("E_CONFIG", "the --store URL is not a valid postgres:// URL");
  }
  return splitUrlSchema(location);
}
