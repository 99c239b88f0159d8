import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { writeLockHolder } from "../src/store/sqlite/lock-holder.js";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions } from "./helpers/eval-project.js";
import {
  keysOf as keys,
  postgresTestStore,
  slowEval,
  sqliteTestStore,
  startOwner as start,
  stopped,
  type TestStore,
  cleanupsAfterEach,
  STALE_MS,
} from "./helpers/owner-stores.js";
import { SKIP_POSTGRES } from "./helpers/postgres.js";

// An owner frozen mid-run (SIGSTOP) is taken over once its heartbeat is older than the stale
// limit, and when it continues it finds itself fenced: it writes nothing more and exits 5.
// Everything runs through the real CLI, as child processes, on both stores.

const N = 24;
/**
 * The stale limit a resume judges a fresh heartbeat with: an hour, which no owner frozen a moment
 * ago can have missed, however slowly that resume starts on a loaded machine.
 */
const HOUR_MS = 3_600_000;
/**
 * The stale limit of the tests whose owner freezes inside a PostgreSQL transaction: its session is
 * ended after half of it idle (10 s), which must not come before the test has seen the row locked.
 */
const IN_TRANSACTION_STALE_MS = 20_000;
const HOOK = fileURLToPath(new URL("./fixtures/freeze/in-transaction.mjs", import.meta.url));

const cleanups = cleanupsAfterEach();

/**
 * Samples of 500 ms, two at a time: after the 4 attempts `startOwner` waits for, the owner has
 * 5 s of work left, time enough for a test on a loaded machine to freeze it before it is done.
 */
function project() {
  const p = evalProject({ "eval.mjs": slowEval(500), "data.jsonl": questions(N) });
  cleanups.push(p.cleanup);
  return p;
}

const STORES: [string, (db: string) => Promise<TestStore>][] = [
  ["SQLite", async (db) => sqliteTestStore(db)],
  ["PostgreSQL", () => postgresTestStore(cleanups)],
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const startOwner = (store: TestStore, dir: string, env: NodeJS.ProcessEnv) =>
  start(store, dir, env, cleanups);

/** Whether another session holds the run's row lock (PostgreSQL). */
async function rowLocked(store: TestStore, runId: string): Promise<boolean> {
  try {
    await store.execOnRuns("SELECT 1 FROM runs WHERE id = ? FOR UPDATE NOWAIT", [runId]);
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === "55P03") return true;
    throw error;
  }
}

/**
 * Stops the owner from outside, as a suspended laptop or a debugger would, at a moment when it
 * holds no SQLite write lock: a freeze inside a commit is the other test's case.
 */
async function freezeBetweenCommits(pid: number, db: string | undefined): Promise<void> {
  for (;;) {
    process.kill(pid, "SIGSTOP");
    await stopped(pid);
    if (db === undefined || writeLockHolder(db) !== pid) return;
    process.kill(pid, "SIGCONT");
    await sleep(20);
  }
}

for (const [kind, open] of STORES) {
  describe.skipIf(kind === "PostgreSQL" && SKIP_POSTGRES)(
    `a frozen owner on ${kind}`,
    { timeout: 180_000 },
    () => {
      it("is refused while its heartbeat is fresh, taken over once it is stale, and fenced when it continues", async () => {
        const p = project();
        const store = await open(p.db);
        const env = { STET_STALE_MS: String(STALE_MS) };
        const { owner, runId, pid } = await startOwner(store, p.dir, env);

        await freezeBetweenCommits(pid, kind === "SQLite" ? p.db : undefined);
        const frozenAt = performance.now();

        // Right after the freeze its heartbeat is fresh: the run is still its own.
        const early = await runCli(["resume", runId, ...store.args], {
          cwd: p.dir,
          env: { STET_STALE_MS: String(HOUR_MS) },
        });
        expect(early.code, early.stderr).toBe(5);
        expect(early.stderr).toContain(`is being executed by pid ${pid} on `);

        await sleep(frozenAt + STALE_MS - performance.now());
        // Read once nothing of the frozen owner can still land (a PostgreSQL transaction it was
        // inside is ended by the server after half the stale limit).
        const atFreeze = await store.attempts();
        expect(atFreeze.length).toBeLessThan(N);
        const takeover = await runCli(["resume", runId, ...store.args], { cwd: p.dir, env });
        expect(takeover.code, takeover.stderr).toBe(0);
        expect(takeover.stdout).toMatch(new RegExp(`plan: ${atFreeze.length} preserved`));
        const finished = await store.attempts();
        expect(finished).toHaveLength(N);
        expect(keys(finished).size).toBe(N);
        for (const row of atFreeze) expect(finished).toContainEqual(row);
        const settled = await store.run(runId);
        expect(settled).toMatchObject({ status: "completed", owner_token: null });

        // Continued, the old owner learns it was taken over, writes nothing and exits 5.
        process.kill(pid, "SIGCONT");
        const end = await owner.done;
        expect(end.code, end.stderr).toBe(5);
        expect(end.stderr).toMatch(
          new RegExp(
            `stet: run ${runId} was taken over .*presumed dead\\. It stopped and wrote nothing more; the run is completed now`,
          ),
        );
        expect(await store.attempts()).toEqual(finished);
        expect(await store.run(runId)).toEqual(settled);
      });
    },
  );
}

// A hang guard: these wait out a stale limit (and SQLite's busy timeout) on a loaded machine.
describe("an owner frozen inside a store transaction", { timeout: 180_000 }, () => {
  async function frozenInTransaction(store: TestStore, dir: string, staleMs: number) {
    const flag = join(dir, "freeze-now");
    const env = {
      STET_STALE_MS: String(staleMs),
      NODE_OPTIONS: `--import=${HOOK}`,
      STET_TEST_FREEZE_FLAG: flag,
    };
    const started = await startOwner(store, dir, env);
    writeFileSync(flag, "");
    await stopped(started.pid);
    expect(existsSync(flag)).toBe(false); // it froze where the hook stops it, in a transaction
    return { ...started, frozenAt: performance.now(), env: { STET_STALE_MS: String(staleMs) } };
  }

  it.skipIf(SKIP_POSTGRES)(
    "on PostgreSQL: the server ends the frozen session, so the takeover does not wait on its row lock",
    async () => {
      const p = project();
      const store = await postgresTestStore(cleanups);
      const staleMs = IN_TRANSACTION_STALE_MS;
      const { owner, runId, pid, frozenAt, env } = await frozenInTransaction(store, p.dir, staleMs);
      expect(await rowLocked(store, runId)).toBe(true);
      const atFreeze = await store.attempts();

      await sleep(frozenAt + staleMs - performance.now());
      // The server ended the frozen session (half the stale limit idle in its transaction): the
      // row is free, and the takeover does not wait on it.
      expect(await rowLocked(store, runId)).toBe(false);
      const takeover = await runCli(["resume", runId, ...store.args], { cwd: p.dir, env });
      expect(takeover.code, takeover.stderr).toBe(0);
      const finished = await store.attempts();
      expect(finished).toHaveLength(N);
      expect(keys(finished).size).toBe(N);
      for (const row of atFreeze) expect(finished).toContainEqual(row);

      process.kill(pid, "SIGCONT");
      const end = await owner.done;
      expect(end.code, end.stderr).toBe(5);
      expect(end.stderr).toContain(`run ${runId} was taken over`);
      expect(await store.attempts()).toEqual(finished);
      expect(await store.run(runId)).toMatchObject({ status: "completed", owner_token: null });
    },
  );

  it("on SQLite: the takeover gives up after the busy timeout, naming the store and the stopped pid", async () => {
    const p = project();
    const store = sqliteTestStore(p.db);
    const { owner, runId, pid, frozenAt, env } = await frozenInTransaction(store, p.dir, STALE_MS);
    // SQLite's write lock is a POSIX lock the frozen process keeps for as long as it is stopped.
    expect(writeLockHolder(p.db)).toBe(pid);

    await sleep(frozenAt + STALE_MS - performance.now());
    const takeover = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(takeover.code, takeover.stderr).toBe(1);
    expect(takeover.stderr).toContain(`store ${p.db}: the database is locked: pid ${pid} holds`);
    expect(takeover.stderr).toContain("is stopped (state T");
    expect(takeover.stderr).toContain(`kill -CONT ${pid}`);

    // Nothing took it from the frozen owner: continued, it finishes the run itself.
    process.kill(pid, "SIGCONT");
    const end = await owner.done;
    expect(end.code, end.stderr).toBe(0);
    const finished = await store.attempts();
    expect(finished).toHaveLength(N);
    expect(keys(finished).size).toBe(N);
    expect(await store.run(runId)).toMatchObject({ status: "completed", owner_token: null });
  });
});
