import pg from "pg";
import { resolve } from "node:path";
import { StetError } from "../../core/errors.js";
import { postgresBatches } from "./batches.js";
import { postgresCache } from "./cache.js";
import { postgresReviews } from "./reviews.js";
import { postgresRates } from "./rates.js";
import type { Store } from "../types.js";
import { postgresAttempts } from "./attempts.js";
import { PostgresContext } from "./context.js";
import { splitSchema } from "./schema-url.js";
import { redactPassword, urlSecrets } from "./driver.js";
import { postgresJournal } from "./journal.js";
import { postgresLeaseStore } from "./leases.js";
import { postgresReads } from "./reads.js";
import { postgresRuns } from "./runs.js";

export interface PostgresStoreOptions {
  /** The schema holding stet's tables (created if missing). Default: the connection's `search_path`. */
  schema?: string;
  /** Connections the store may hold at once. Default 4. */
  maxConnections?: number;
  /** Where the engine writes attempts it could not commit. Default `.stet` in the working directory. */
  fallbackDir?: string;
  /** The connections' `application_name`, as pg_stat_activity shows it. Default "stet". */
  applicationName?: string;
  /**
   * False for commands that only read: a database (or schema) without stet's tables is refused
   * with `E_STORE` instead of having them created. Default true.
   */
  create?: boolean;
  /**
   * How long one of the store's sessions may sit idle inside a transaction before the server
   * ends it, rolling it back and releasing its locks: a process frozen (SIGSTOP, a suspended VM)
   * between two statements of a write must not hold the run's row lock past the stale limit, or
   * the takeover would wait on it. Keep it below the stale limit. Default 10 s.
   */
  idleInTransactionTimeoutMs?: number;
  /**
   * How long a statement waits for a lock before it fails (`E_STORE`, naming the wait), so no
   * claim, recovery or write waits forever on a session that holds one. Default: the idle
   * timeout + 5 s, by when a frozen session of stet's has been ended.
   */
  lockTimeoutMs?: number;
}

/** A session idle inside a transaction this long is ended by the server (see the option). */
export const DEFAULT_IDLE_IN_TRANSACTION_MS = 10_000;

/**
 * A store in a PostgreSQL database, shared by every process and machine that connects to it:
 * ownership claims are compare-and-set updates, fencing holds the run's row lock until commit,
 * and heartbeat ages are read on the database server's clock, so hosts with skewed clocks agree
 * on who is stale. Connects, and migrates the schema, on first use; a database that cannot be
 * reached fails that call with `E_STORE` (and a later call tries again). One sub-port per file
 * over a shared context (`context.ts`: the pool, the session, `guard` and the fences).
 *
 * @example const store = openPostgresStore("postgres://stet@db.internal/evals?schema=stet");
 */
export function openPostgresStore(location: string, options: PostgresStoreOptions = {}): Store {
  // The URL may name the schema as the CLI's --store does (`?schema=name`): the option wins.
  const fromUrl = splitSchema(location);
  const url = fromUrl.url;
  const schema = options.schema ?? fromUrl.schema;
  // Lower case only: the name is used unquoted in search_path, where PostgreSQL folds case.
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new StetError(
      "E_CONFIG",
      `invalid PostgreSQL schema name "${schema}": use lower-case letters, digits and _`,
    );
  }
  const idleMs = options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_MS;
  const lockMs = options.lockTimeoutMs ?? idleMs + 5_000;
  const poolOf = (max: number) =>
    new pg.Pool({
      connectionString: url,
      max,
      application_name: options.applicationName ?? "stet",
      // Session settings sent when each connection starts (a URL parameter of the same name wins).
      idle_in_transaction_session_timeout: idleMs,
      lock_timeout: lockMs,
      // Statements go out without waiting for the answers before them (one round trip for
      // several: `pipelinedTransaction`); a connection awaiting each answer works as before.
      pipeline: true,
      ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
    }).on("error", () => {}); // An idle connection the server drops; the next query opens another.
  const pool = poolOf(options.maxConnections ?? 4);
  // Rate-limit takes get a connection of their own, opened on the first: a take waits on no
  // commit of the process (a chunk's lease runs from before it was asked).
  let ratePool: pg.Pool | undefined;
  const rateDb = () => (ratePool ??= poolOf(1));
  const c = new PostgresContext(
    pool,
    `${redactPassword(url)}${schema === undefined ? "" : ` (schema ${schema})`}`,
    options.fallbackDir ?? resolve(".stet"),
    { schema, idleMs, lockMs },
    urlSecrets(url),
    options.create ?? true,
  );
  return {
    location: c.location,
    fallbackDir: c.fallbackDir,
    secrets: c.secrets,
    runs: postgresRuns(c),
    attempts: postgresAttempts(c),
    reads: postgresReads(c),
    journal: postgresJournal(c),
    cache: postgresCache(c),
    reviews: postgresReviews(c),
    rates: postgresRates(c, rateDb),
    batches: postgresBatches(c),
    leases: postgresLeaseStore(c),
    async close() {
      await Promise.all([pool.end(), ratePool?.end()]);
    },
  };
}
