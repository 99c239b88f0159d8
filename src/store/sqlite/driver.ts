/**
 * The part of better-sqlite3 the SQLite adapter uses, declared here so the adapter takes any
 * driver of this shape (kysely style) and tests can see exactly what it depends on.
 */
export interface SqliteStatement<Row> {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): Row | undefined;
  all(...params: unknown[]): Row[];
  iterate(...params: unknown[]): IterableIterator<Row>;
  /** Rows as arrays in SELECT order; declare `Row` as the matching tuple. */
  raw(toggle?: boolean): this;
}

export interface SqliteDatabase {
  /** `Row` declares the shape of the rows the SQL selects; the adapter maps them to domain objects. */
  prepare<Row = unknown>(sql: string): SqliteStatement<Row>;
  exec(sql: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  readonly inTransaction: boolean;
  close(): unknown;
}

/**
 * Runs `fn` in a `BEGIN IMMEDIATE` transaction: commits when it returns, rolls back when it throws.
 *
 * IMMEDIATE takes the write lock up front. A deferred transaction that reads and then writes can
 * fail with SQLITE_BUSY without waiting (busy_timeout does not apply to a read lock upgrade in WAL
 * mode), and its read could be stale; IMMEDIATE makes every check inside `fn` hold until commit.
 *
 * @example immediate(db, () => insert.run(row));
 */
export function immediate<T>(db: SqliteDatabase, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    // SQLite may already have rolled back on its own (e.g. SQLITE_FULL); a second ROLLBACK would throw.
    if (db.inTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

/**
 * Runs `fn` with `synchronous = NORMAL`, then sets the connection's setting back: in WAL mode its
 * commits are not fsynced (the next synced commit's fsync makes them durable with its own). Only
 * for writes a crash of the machine may lose without breaking a guarantee, such as a rate
 * bucket's level, whose fsync on a loaded disk took up to 140 ms: a chunk of a declared limit
 * leased for 150 ms (a 6 s test window) came lapsed.
 *
 * @example unsynced(db, () => immediate(db, () => bucketPut.run(row)));
 */
export function unsynced<T>(db: SqliteDatabase, fn: () => T): T {
  const was = Number(db.pragma("synchronous", { simple: true }));
  db.pragma("synchronous = NORMAL");
  try {
    return fn();
  } finally {
    db.pragma(`synchronous = ${was}`);
  }
}
