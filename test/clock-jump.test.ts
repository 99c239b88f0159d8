import { describe, expect, it } from "vitest";
import { ownerLiveness } from "../src/engine/owner.js";
import { readRun } from "../src/runs/read-run.js";
import { recoverOrphans } from "../src/runs/recover-orphans.js";
import { planResume } from "../src/runs/resume-run.js";
import { openPostgresStore } from "../src/store/postgres.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import type { Store } from "../src/store/types.js";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions } from "./helpers/eval-project.js";
import {
  keysOf,
  postgresTestStore,
  slowEval,
  sqliteTestStore,
  startOwner,
  type TestStore,
  cleanupsAfterEach,
  STALE_MS,
} from "./helpers/owner-stores.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL } from "./helpers/postgres.js";
import { until } from "./helpers/wait.js";

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
const HOUR = 3_600_000;
const OTHER_HOST = "elsewhere#00000000";

const cleanups = cleanupsAfterEach();

interface Case {
  store: TestStore;
  dir: string;
  /**
   * The judge's store, its clock (or the heartbeat it reads) moved by `jumpMs`; `live` when the
   * owner still beats.
   */
  judge: (runId: string, jumpMs: number, live: boolean) => Promise<Store>;
}

async function sqliteCase(): Promise<Case> {
  const p = evalProject({ "eval.mjs": slowEval(200), "data.jsonl": questions(N) });
  cleanups.push(p.cleanup);
  const store = sqliteTestStore(p.db);
  return {
    store,
    dir: p.dir,
    judge: async (_runId, jumpMs) => {
      const judge = openSqliteStore(p.db, { now: () => Date.now() + jumpMs });
      cleanups.push(() => judge.close());
      return judge;
    },
  };
}

async function postgresCase(): Promise<Case> {
  const p = evalProject({ "eval.mjs": slowEval(200), "data.jsonl": questions(N) });
  cleanups.push(p.cleanup);
  const store = await postgresTestStore(cleanups);
  const judge = openPostgresStore(TEST_POSTGRES_URL, { schema: store.schema! });
  cleanups.push(() => judge.close());
  return {
    store,
    dir: p.dir,
    judge: async (runId, jumpMs, live) => {
      // Right after a beat, so a live owner's next one (0.75 s away) lands after the judge's read.
      const beat = (await store.run(runId))?.heartbeat_at;
      if (live) await until(async () => (await store.run(runId))?.heartbeat_at !== beat, "a beat");
      await store.execOnRuns("UPDATE runs SET heartbeat_at = heartbeat_at - ? WHERE id = ?", [
        jumpMs,
        runId,
      ]);
      return judge;
    },
  };
}

const CASES: [string, () => Promise<Case>][] = [
  ["SQLite", sqliteCase],
  ["PostgreSQL", postgresCase],
];

const env = { STET_STALE_MS: String(STALE_MS) };
const stale = { staleMs: STALE_MS };

async function asIfOnAnotherHost(store: TestStore, runId: string): Promise<void> {
  await store.execOnRuns("UPDATE runs SET owner_host = ? WHERE id = ?", [OTHER_HOST, runId]);
}

for (const [kind, open] of CASES) {
  describe.skipIf(kind === "PostgreSQL" && SKIP_POSTGRES)(`a clock jump on ${kind}`, () => {
    it("an hour forward: the live owner's run is not taken over, and it finishes the run", async () => {
      const { store, dir, judge } = await open();
      const { owner, runId } = await startOwner(store, dir, env, cleanups);
      await asIfOnAnotherHost(store, runId);

      // By the wall clock alone the owner looks an hour dead; watched, it keeps beating.
      let judging = await judge(runId, HOUR, true);
      const seen = await judging.getRun(runId);
      expect(seen!.owner!.heartbeatAgeMs).toBeGreaterThan(HOUR - 60_000);
      expect(ownerLiveness(seen!.owner!, stale)).toMatchObject({ alive: false, unconfirmed: true });
      const planning = await planResume({ store: judging, runId, ...stale });
      expect(planning.ok).toBe(false);
      if (planning.ok) return;
      expect(planning.refusal.reason).toBe("run-active");
      expect(planning.refusal.error.message).toMatch(/beat again while watched: it is alive/);

      judging = await judge(runId, HOUR, true);
      expect(await recoverOrphans(judging, stale)).toEqual({
        recovered: [],
        alive: [runId],
        skipped: [],
      });
      judging = await judge(runId, HOUR, true);
      const read = await readRun(judging, runId, { ...stale, recover: true });
      expect(read.run.status).toBe("running");
      expect(read.owner).toMatchObject({ host: OTHER_HOST, alive: true });

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

      const judging = await judge(runId, -HOUR, false);
      const seen = await judging.getRun(runId);
      expect(seen!.owner!.heartbeatAgeMs).toBeLessThan(-HOUR + 60_000);
      expect(ownerLiveness(seen!.owner!, stale)).toMatchObject({ alive: false, unconfirmed: true });
      const started = performance.now();
      const recovery = await recoverOrphans(judging, stale);
      // Twice the heartbeat interval of watching, not the hour the clock says to wait.
      expect(performance.now() - started).toBeLessThan(STALE_MS);
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
