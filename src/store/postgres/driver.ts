import { createHash } from "node:crypto";
import type { Pool, PoolClient, QueryConfig, QueryResultRow } from "pg";
import { declaredSecret, type Secret } from "../../core/secrets.js";

/** Where a statement runs: the pool (one statement, auto-commit) or a transaction's client. */
export type Queryable = Pick<Pool | PoolClient, "query">;

/** A statement written with `@name` parameters, compiled once to PostgreSQL's `$n` placeholders. */
export interface Statement {
  /** Rows as objects keyed by column name. */
  rows<Row extends QueryResultRow>(db: Queryable, params?: Params): Promise<Row[]>;
  /** Rows as arrays in SELECT order; declare `Row` as the matching tuple. */
  tuples<Row extends unknown[]>(db: Queryable, params?: Params): Promise<Row[]>;
  /** Runs it and returns how many rows it changed. */
  run(db: Queryable, params?: Params): Promise<number>;
}

type Params = Record<string, unknown>;

/**
 * Compiles SQL with `@name` parameters (as the SQLite adapter writes them) into a Statement.
 * A name may appear several times; each distinct name becomes one `$n`. `prepare` makes it a
 * named prepared statement, parsed once per connection: for the hot write path, not for queries
 * whose best plan depends on which optional filters are null.
 *
 * @example
 * const byId = statement("SELECT * FROM runs WHERE id = @runId");
 * const [row] = await byId.rows(pool, { runId: "r_1" });
 */
export function statement(sql: string, options: { prepare?: boolean } = {}): Statement {
  const names: string[] = [];
  const text = sql.replace(/@([A-Za-z_]\w*)/g, (_, name: string) => {
    const index = names.indexOf(name);
    if (index >= 0) return `$${index + 1}`;
    names.push(name);
    return `$${names.length}`;
  });
  // Named after the SQL itself: the same statement gets the same name on every connection.
  const name = options.prepare
    ? `stet_${createHash("sha256").update(text).digest("hex").slice(0, 16)}`
    : undefined;
  const values = (params: Params = {}) =>
    names.map((name) => {
      if (!(name in params)) throw new Error(`missing SQL parameter @${name}`);
      return params[name];
    });
  return {
    async rows<Row extends QueryResultRow>(db: Queryable, params?: Params) {
      return (await db.query<Row>({ name, text, values: values(params) })).rows;
    },
    async tuples<Row extends unknown[]>(db: Queryable, params?: Params) {
      const result = await db.query<Row>({ name, text, values: values(params), rowMode: "array" });
      return result.rows;
    },
    async run(db: Queryable, params?: Params) {
      return (await db.query({ name, text, values: values(params) })).rowCount ?? 0;
    },
  };
}

/**
 * Runs `fn` in a transaction on one pooled connection: commits when it returns, rolls back when
 * it throws. A connection that fails (or whose rollback fails) is discarded rather than returned
 * to the pool.
 *
 * @example await transaction(pool, async (tx) => insert.run(tx, row));
 */
export async function transaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  const session = await checkOut(pool);
  try {
    return await transactionOn(session, fn);
  } finally {
    session.release();
  }
}

/** A pooled connection checked out for several statements and transactions (`checkOut`). */
export interface Session {
  readonly client: PoolClient;
  /** Marks the connection unfit for reuse: `release` has the pool discard it. */
  discard(error: Error): void;
  /** Returns the connection to the pool, or has it discarded if it failed. */
  release(): void;
}

/**
 * Checks a connection out of the pool for as long as the caller needs it (a session's TEMP
 * tables are its own): release it in a `finally`. A connection that failed meanwhile (its
 * "error" event, or one the caller `discard`s) is closed by the pool rather than reused.
 *
 * @example const session = await checkOut(pool); try { … } finally { session.release(); }
 */
export async function checkOut(pool: Pool): Promise<Session> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A connection that drops between two statements emits "error" on the checked-out client;
  // unheard, that would crash the process. The next statement fails with it instead.
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  return {
    client,
    discard(error) {
      broken = error;
    },
    release() {
      client.off("error", onError);
      client.release(broken);
    },
  };
}

/**
 * `transaction` on a connection already checked out: commits when `fn` returns, rolls back
 * when it throws (a rollback that fails discards the connection).
 *
 * @example await transactionOn(session, async (tx) => insert.run(tx, row));
 */
export async function transactionOn<T>(
  session: Session,
  fn: (tx: PoolClient) => Promise<T>,
): Promise<T> {
  const { client } = session;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch((rollback: Error) => session.discard(rollback));
    throw error;
  }
}

/**
 * A transaction's connection in pg's pipeline mode: a statement goes out at once, without waiting
 * for the answers of those before it, so statements sent together cost one round trip.
 */
export interface PipelinedTx extends Queryable {
  /**
   * Keeps a statement's answer unread until COMMIT: the writes a transaction sends last go out
   * with its COMMIT, and a failure among them rolls it back and is thrown, as an awaited one is.
   */
  defer(answer: Promise<unknown>): void;
}

/**
 * A statement sent through a pipelined transaction after its COMMIT: a bug (a deferred function
 * awaited an answer before sending it), thrown and never sent; the transaction's other
 * statements may have committed without it.
 */
const AFTER_COMMIT =
  "a statement after its transaction's COMMIT (a deferred write that awaited before sending it)";

/**
 * `transaction` in two round trips where `fn` waits for answers once: BEGIN goes out with `fn`'s
 * first statements, and COMMIT right behind the statements `fn` deferred. The connection must be
 * in pipeline mode (the pool's `pipeline` option). Every answer `fn` awaits implies that BEGIN
 * succeeded; `fn` must read, not write, before its first await (were BEGIN to fail, statements
 * sent with it would run outside a transaction). A COMMIT that the server turned into a
 * ROLLBACK (a deferred statement failed) is thrown, never taken for a commit.
 *
 * @example
 * await pipelinedTransaction(pool, async (tx) => {
 *   const [row] = await lock.rows(tx, { runId });
 *   tx.defer(insert.run(tx, row));
 * });
 */
export async function pipelinedTransaction<T>(
  pool: Pool,
  fn: (tx: PipelinedTx) => Promise<T>,
): Promise<T> {
  const session = await checkOut(pool);
  const { client } = session;
  const deferred: Promise<unknown>[] = [];
  // A deferred write that failed before COMMIT goes out (it threw before sending its statement,
  // or BEGIN failed): the transaction is rolled back instead of committed without it. Its
  // handler has run by the time `fn`'s answer is awaited (queued before that await resumes).
  let failedEarly: { error: unknown } | undefined;
  const defer = (answer: Promise<unknown>) => {
    // Otherwise read (and thrown) when COMMIT's answer is.
    answer.catch((error: unknown) => {
      failedEarly ??= { error };
    });
    deferred.push(answer);
  };
  const out = new CorkedSocket(client);
  let begun = false;
  const begin = out
    .send(() => client.query("BEGIN"))
    .then(() => {
      begun = true;
    });
  defer(begin);
  let committing = false;
  const query = (config: QueryConfig) => {
    if (committing) throw new Error(AFTER_COMMIT);
    const answer = out.send(() => client.query(config));
    // An answer to a statement sent with BEGIN is believed only once BEGIN's is.
    return begun ? answer : Promise.all([begin, answer]).then(([, result]) => result);
  };
  const tx = { query: query as Queryable["query"], defer };
  try {
    const running = fn(tx);
    out.flush(); // BEGIN and what fn sent before its first await
    const result = await running;
    if (failedEarly) throw failedEarly.error;
    committing = true;
    const commit = out.send(() => client.query("COMMIT"));
    out.flush(); // the statements fn sent last, and COMMIT
    defer(commit);
    await Promise.all(deferred);
    const { command } = await commit;
    if (command !== "COMMIT") throw new Error(`COMMIT answered ${command}`);
    return result;
  } catch (error) {
    const rollback = out.send(() => client.query("ROLLBACK"));
    out.flush();
    await rollback.catch((failure: Error) => session.discard(failure));
    throw error;
  } finally {
    session.release();
  }
}

/**
 * A connection's socket held corked while statements are sent, so that those sent together go
 * out in one write (one system call, one wake-up of the server) rather than one each. `flush`
 * sends them; an event-loop turn later they go out anyway, so nothing waits on a held statement.
 */
class CorkedSocket {
  #corked = false;
  readonly #socket: PoolClient["connection"]["stream"];

  constructor(client: PoolClient) {
    this.#socket = client.connection.stream;
  }

  send<T>(statement: () => T): T {
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      setImmediate(() => this.flush());
    }
    return statement();
  }

  flush(): void {
    if (!this.#corked) return;
    this.#corked = false;
    this.#socket.uncork();
  }
}

/** The database server's clock in milliseconds since the epoch: one clock for every host. */
export const DB_NOW_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::float8`;

/** The database server's clock as ISO-8601 UTC with milliseconds, as `Date.toISOString` writes. */
export const DB_NOW_ISO = `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The credentials a connection URL carries (its password, `?password=` parameters), for runs to
 * redact wherever they are echoed (see `redactPassword` for the URL itself).
 *
 * @example urlSecrets("postgres://u:hunter22@db/x") // [{ name: "--store password", value: "hunter22" }]
 */
export function urlSecrets(url: string): Secret[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const values = [
    decodeURIComponent(parsed.password),
    ...[...parsed.searchParams].filter(([name]) => /pass/i.test(name)).map(([, value]) => value),
  ];
  return values.flatMap((value) => declaredSecret("--store password", value));
}

/**
 * A connection URL fit for messages and listings: the password replaced by `***`, in the user
 * info and in any query parameter whose name holds "pass" (`?password=`, `?sslpassword=`, which
 * the driver reads too).
 *
 * @example redactPassword("postgres://u:secret@db/x") // "postgres://u:***@db/x"
 */
export function redactPassword(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, "//$1:***@");
  }
  let changed = false;
  if (parsed.password !== "") {
    parsed.password = "***";
    changed = true;
  }
  for (const name of [...parsed.searchParams.keys()]) {
    if (/pass/i.test(name)) {
      parsed.searchParams.set(name, "***");
      changed = true;
    }
  }
  return changed ? parsed.toString() : url;
}
