import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ownerLiveness } from "../src/engine/owner.js";
import { readRun } from "../src/runs/read-run.js";
import { recoverOrphans } from "../src/runs/recover-orphans.js";
import { planResume } from "../src/runs/resume-run.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions } from "./helpers/eval-project.js";
import {
  keysOf,
  postgresTestStore,
  sqliteTestStore,
  startOwner,
  stopped,
  type TestStore,
  cleanupsAfterEach,
  STALE_MS,
} from "./helpers/owner-stores.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL } from "./helpers/postgres.js";

// A wall-clock jump on the machine that judges an owner neither lets a second owner take a live
// owner's run nor strands a dead owner's. The owner is a real `stet run` child process, made to
// look like one on another host (its row's host rewritten), so its pid cannot answer and only
// the heartbeat can. The judge is this process, deciding as `stet resume`, `stet list` and a
// server's sweep do.
//
// The jump is played deterministically. On SQLite heartbeats are stamped and aged by each
// process's own clock: the judge opens the store with its clock an hour off. On PostgreSQL they
// are stamped and aged by the database server's clock, which no client's jump moves: the row's
// heartbeat is shifted by an hour instead, which is what a jump of that clock leaves behind.

const N = 40;

/**
 * `slowEval(200)`'s eval, whose samples also wait while the project has a file `hold`: a live
 * owner stays running, however long the judgements take on a loaded machine, until it is removed.
 */
const holdingEval = `
import { appendFileSync, existsSync } from "node:fs";
import { defineEval, scorers } from "stet";
const held = () => existsSync(new URL("./hold", import.meta.url));
export default defineEval({
  name: "slow",
  dataset: "./data.jsonl",
  solver: async (sample) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "\\n");
    await new Promise((r) => setTimeout(r, 200));
    while (held()) await new Promise((r) => setTimeout(r, 20));
    return String(sample.input).replace("question", "answer");
  },
  scorers: [scorers.exact()],
  concurrency: 2,
});
`;
const HOUR = 3_600_000;
const OTHER_HOST = "elsewhere#00000000";

const cleanups = cleanupsAfterEach();

interface Case {
  store: TestStore;
  dir: string;
  /**
   * The judge's store, its clock (or the heartbeat it reads) moved by `jumpMs`, as `judging`; for
   * a live owner (`pid`) also as `watching`, for a judgement that watches the owner beat.
   */
  judge: (
    owner: { runId: string; pid?: number },
    jumpMs: number,
  ) => Promise<{ judging: Store; watching: Store }>;
}

async function sqliteCase(): Promise<Case> {
  const p = evalProject({ "eval.mjs": holdingEval, "data.jsonl": questions(N) });
  cleanups.push(p.cleanup);
  const store = sqliteTestStore(p.db);
  return {
    store,
    dir: p.dir,
    judge: async (_owner, jumpMs) => {
      const judge = openSqliteStore(p.db, { now: () => Date.now() + jumpMs });
      cleanups.push(() => judge.close());
      return { judging: judge, watching: judge };
    },
  };
}

async function postgresCase(): Promise<Case> {
  const p = evalProject({ "eval.mjs": holdingEval, "data.jsonl": questions(N) });
  cleanups.push(p.cleanup);
  const store = await postgresTestStore(cleanups);
  const judge = openPostgresStore(TEST_POSTGRES_URL, { schema: store.schema! });
  cleanups.push(() => judge.close());
  return {
    store,
    dir: p.dir,
    judge: async ({ runId, pid }, jumpMs) => {
      // A live owner's next beat would stamp the heartbeat anew: it is stopped until the judge
      // has read the shifted one, and continued then, so the judge's watching sees it beat.
      if (pid !== undefined) {
        process.kill(pid, "SIGSTOP");
        await stopped(pid);
      }
      await store.execOnRuns("UPDATE runs SET heartbeat_at = heartbeat_at - ? WHERE id = ?", [
        jumpMs,
        runId,
      ]);
      return {
        judging: judge,
        watching: pid === undefined ? judge : continuedAfterRead(judge, pid),
      };
    },
  };
}

/** `store`, but its first `getRun` continues the stopped process `pid` once it has read. */
function continuedAfterRead(store: Store, pid: number): Store {
  let stopped = true;
  return {
    ...store,
    runs: {
      ...store.runs,
      get: async (runId) => {
        const run = await store.runs.get(runId);
        if (stopped) process.kill(pid, "SIGCONT");
        stopped = false;
        return run;
      },
    },
  };
}

const CASES: [string, () => Promise<Case>][] = [
  ["SQLite", sqliteCase],
  ["PostgreSQL", postgresCase],
];

const env = { STET_STALE_MS: String(STALE_MS) };
const stale = { staleMs: STALE_MS };
/**
 * How a judge watches a live owner: for up to 20 s, so that an owner starved of CPU for seconds
 * on a loaded machine still beats in time. Watching ends at the beat, so a live owner costs
 * no more than that.
 */
const watchLive = { staleMs: 30_000, heartbeatMs: 10_000 };

async function asIfOnAnotherHost(store: TestStore, runId: string): Promise<void> {
  await store.execOnRuns("UPDATE runs SET owner_host = ? WHERE id = ?", [OTHER_HOST, runId]);
}

for (const [kind, open] of CASES) {
  describe.skipIf(kind === "PostgreSQL" && SKIP_POSTGRES)(`a clock jump on ${kind}`, () => {
    it("an hour forward: the live owner's run is not taken over, and it finishes the run", async () => {
      const { store, dir, judge } = await open();
      // The owner runs with the default stale limit: beats every 2 s, and no 1.5 s idle limit on
      // its PostgreSQL transactions, which being stopped for a moment must not hit.
      const { owner, runId, pid } = await startOwner(store, dir, {}, cleanups);
      writeFileSync(join(dir, "hold"), "");
      await asIfOnAnotherHost(store, runId);

      // By the wall clock alone the owner looks an hour dead; watched, it keeps beating.
      const first = await judge({ runId, pid }, HOUR);
      const { judging } = first;
      let { watching } = first;
      const seen = await judging.runs.get(runId);
      expect(seen!.owner!.heartbeatAgeMs).toBeGreaterThan(HOUR - 60_000);
      expect(ownerLiveness(seen!.owner!, watchLive)).toMatchObject({
        alive: false,
        unconfirmed: true,
      });
      const planning = await planResume({ store: watching, runId, ...watchLive });
      expect(planning.ok).toBe(false);
      if (planning.ok) return;
      expect(planning.refusal.reason).toBe("run-active");
      expect(planning.refusal.error.message).toMatch(/beat again while watched: it is alive/);

      ({ watching } = await judge({ runId, pid }, HOUR));
      expect(await recoverOrphans(watching, watchLive)).toEqual({
        recovered: [],
        alive: [runId],
        skipped: [],
      });
      ({ watching } = await judge({ runId, pid }, HOUR));
      const read = await readRun(watching, runId, { ...watchLive, recover: true });
      expect(read.run.status).toBe("running");
      expect(read.owner).toMatchObject({ host: OTHER_HOST, alive: true });

      rmSync(join(dir, "hold"));
      const end = await owner.done;
      expect(end.code, end.stderr).toBe(0);
      const attempts = await store.attempts();
      expect(attempts).toHaveLength(N);
      expect(keysOf(attempts).size).toBe(N);
    });

    it("an hour back: a dead owner's heartbeat from the future does not strand its run", async () => {
      const { store, dir, judge } = await open();
      const { owner, runId } = await startOwner(store, dir, env, cleanups);
      owner.child.kill("SIGKILL");
      await owner.done;
      await asIfOnAnotherHost(store, runId);
      const killed = await store.attempts();

      const { judging } = await judge({ runId }, -HOUR);
      const seen = await judging.runs.get(runId);
      expect(seen!.owner!.heartbeatAgeMs).toBeLessThan(-HOUR + 60_000);
      expect(ownerLiveness(seen!.owner!, stale)).toMatchObject({ alive: false, unconfirmed: true });
      const recovery = await recoverOrphans(judging, stale);
      // Twice the heartbeat interval of watching, not the hour the clock says to wait.
      expect(recovery.recovered).toEqual([
        { runId, reason: expect.stringMatching(/in the future .*did not beat in 1\.5s/) },
      ]);

      const resumed = await runCli(["resume", runId, ...store.args], { cwd: dir, env });
      expect(resumed.code, resumed.stderr).toBe(0);
      const attempts = await store.attempts();
      expect(attempts).toHaveLength(N);
      expect(keysOf(attempts).size).toBe(N);
      for (const row of killed) expect(attempts).toContainEqual(row);
    });
  });
}
