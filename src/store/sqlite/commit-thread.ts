import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";

/** One statement of a transaction: its name in the thread's table, and its named parameters. */
export type CommitOp = [name: string, params: Record<string, unknown>];

/** What the thread answers for a transaction: done, or the token is not the run's owner. */
export type CommitAnswer = "done" | "not-owner";

/** What the thread needs to open its own connection to the store file. */
interface ThreadData {
  driver: string;
  path: string;
  busyTimeoutMs: number;
  /** The statements it may run, by name; `owner` reads a run's owner token. */
  statements: Record<string, string>;
}

interface Request {
  id: number;
  runId: string;
  token: string;
  ops: CommitOp[];
}

type Reply =
  { id: number; answer: CommitAnswer } | { id: number; error: { message: string; code?: string } };

/**
 * A second connection to a SQLite store file, in a thread of its own, that commits transactions
 * the store's owner hands it: the commit's fsync (synchronous=FULL) blocks that thread, not the
 * one running the evaluation. Each transaction is `BEGIN IMMEDIATE`, the owner-token check, the
 * statements, `COMMIT`; `run` resolves once the commit is durable. A token that is not the run's
 * owner is rolled back and answered `not-owner` (the caller takes its own path, whose fence
 * knows leases and says why). Transactions commit in the order they were handed over.
 *
 * @example const thread = new CommitThread(path, 10_000, { owner: "SELECT …", insert: "INSERT …" });
 */
export class CommitThread {
  readonly #worker: Worker;
  readonly #pending = new Map<
    number,
    { resolve: (a: CommitAnswer) => void; reject: (e: unknown) => void }
  >();
  #next = 0;
  #failure: Error | null = null;

  constructor(path: string, busyTimeoutMs: number, statements: Record<string, string>) {
    const driver = pathToFileURL(createRequire(import.meta.url).resolve("better-sqlite3")).href;
    const workerData: ThreadData = { driver, path, busyTimeoutMs, statements };
    this.#worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData,
      // None of the process's flags: no loader hooks (`--import tsx`) to start, no profiler.
      execArgv: [],
    });
    // The thread keeps nothing alive: a transaction nobody awaits any more is a kill's to lose.
    this.#worker.unref();
    this.#worker.on("message", (reply: Reply) => this.#settle(reply));
    this.#worker.on("error", (error) => this.#stop(error));
    this.#worker.on("exit", () => this.#stop(new Error("the store's commit thread exited")));
  }

  /** The thread stopped (it could not start, or exited): nothing more is handed to it. */
  get failed(): boolean {
    return this.#failure !== null;
  }

  /** Commits `ops` after checking `token` owns `runId`; resolves once durable. */
  run(runId: string, token: string, ops: CommitOp[]): Promise<CommitAnswer> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#next++;
    const request: Request = { id, runId, token, ops };
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage(request);
    });
  }

  /** Ends the thread after the transactions handed over (its connection closes). */
  async close(): Promise<void> {
    if (this.#failure) return;
    const exited = new Promise((resolve) => this.#worker.once("exit", resolve));
    // Held until it has exited: the connection is closed before the store's close resolves.
    this.#worker.ref();
    this.#worker.postMessage(null);
    await exited;
  }

  #settle(reply: Reply): void {
    const pending = this.#pending.get(reply.id);
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (!pending) return;
    if ("answer" in reply) return pending.resolve(reply.answer);
    // The driver's error as the adapter's guard reads it: its message and SQLite code.
    pending.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }));
  }

  #stop(error: Error): void {
    this.#failure ??= error;
    for (const { reject } of this.#pending.values()) reject(this.#failure);
    this.#pending.clear();
  }
}

/**
 * The thread's own code, as source text: a transpiler that rewrites functions (esbuild's
 * keepNames under tsx adds `__name` calls) never sees it, so it runs the same from dist/, from
 * the TypeScript sources and under any loader. It imports what it needs (`import()` works
 * whether the eval'd code runs as CommonJS or, under `--input-type=module`, as a module). It opens its connection on first use (the file is the store's, opened and migrated already),
 * prepares `workerData.statements`, and answers each request in order with
 * `{ id, answer: "done" | "not-owner" }` or `{ id, error: { message, code } }`; `null` closes.
 */
const THREAD_SOURCE = `
(async () => {
  const { workerData: data, parentPort: port } = await import("node:worker_threads");
  const { default: Database } = await import(data.driver);
  let db;
  const prepared = new Map();
  const open = () => {
    if (db) return db;
    const opened = new Database(data.path, { fileMustExist: true });
    opened.pragma("busy_timeout = " + data.busyTimeoutMs);
    opened.pragma("synchronous = FULL");
    opened.pragma("foreign_keys = ON");
    for (const [name, text] of Object.entries(data.statements)) {
      prepared.set(name, opened.prepare(text));
    }
    return (db = opened);
  };
  const commit = ({ runId, token, ops }) => {
    const conn = open();
    conn.exec("BEGIN IMMEDIATE");
    try {
      const row = prepared.get("owner").get(runId);
      if (!row || row.owner_token !== token) {
        conn.exec("ROLLBACK");
        return "not-owner";
      }
      for (const [name, params] of ops) prepared.get(name).run(params);
      conn.exec("COMMIT");
      return "done";
    } catch (error) {
      if (conn.inTransaction) conn.exec("ROLLBACK");
      throw error;
    }
  };
  port.on("message", (request) => {
    if (request === null) {
      if (db) db.close();
      port.close();
      return;
    }
    try {
      port.postMessage({ id: request.id, answer: commit(request) });
    } catch (error) {
      const code = typeof error?.code === "string" ? error.code : undefined;
      port.postMessage({ id: request.id, error: { message: String(error?.message ?? error), code } });
    }
  });
})();
`;
