import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions } from "./helpers/eval-project.js";
import {
  cleanupsAfterEach,
  keysOf,
  postgresTestStore,
  sqliteTestStore,
  STALE_MS,
  startOwner,
  stopped,
  type TestStore,
} from "./helpers/owner-stores.js";
import { SKIP_POSTGRES } from "./helpers/postgres.js";
import { writeLockHolder } from "../src/store/sqlite/lock-holder.js";

// Issue 15's takeover case with a real frozen process: an agent's owner is stopped with SIGSTOP
// past the stale limit, a resume in another process takes the run over and finishes it, and when
// the old owner continues, its in-flight agents' steps are refused by the fencing token: not one
// journal entry (nor attempt) it makes after the takeover is stored, and it exits 5.

// 24 samples of ~0.5 s, two at a time: after the 4 that `startOwner` waits for, ~5 s of work is
// left, time enough for a test on a loaded machine to freeze the owner before it is done.
const N = 24;
const STEPS = 6;

/** Each sample: STEPS journaled tool steps of 80 ms, so a frozen owner has steps in flight. */
const AGENT = `
import { defineEval } from "stet";
export default defineEval({
  name: "frozen-agent",
  dataset: "./data.jsonl",
  concurrency: 2,
  solver: async (sample, ctx) => {
    let last = "";
    for (let i = 0; i < ${STEPS}; i++) {
      last = await ctx.step("tool", { i, input: sample.input }, async () => {
        await new Promise((r) => setTimeout(r, 80));
        return { done: sample.id + ":" + i };
      });
    }
    return String(sample.input).replace("question", "answer");
  },
  scorers: [function answered({ output }) { return typeof output === "string" && output.startsWith("answer"); }],
});
`;

const cleanups = cleanupsAfterEach();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

const STORES: [string, (db: string) => Promise<TestStore>][] = [
  ["SQLite", async (db) => sqliteTestStore(db)],
  ["PostgreSQL", () => postgresTestStore(cleanups)],
];

for (const [kind, open] of STORES) {
  describe.skipIf(kind === "PostgreSQL" && SKIP_POSTGRES)(`a frozen agent owner on ${kind}`, () => {
    it("cannot append journal entries once taken over: its late steps are fenced", async () => {
      const p = evalProject({ "eval.mjs": AGENT, "data.jsonl": questions(N) });
      cleanups.push(p.cleanup);
      const store = await open(p.db);
      const env = { STET_STALE_MS: String(STALE_MS) };
      const { owner, runId, pid } = await startOwner(store, p.dir, env, cleanups);

      // Freeze it between commits (a freeze inside a SQLite commit is frozen-owner.test.ts's case)
      // while agents are mid-trajectory: some steps journaled, their attempts not committed.
      const midTrajectory = async () => (await store.journal()).some((r) => r.attempt === null);
      for (;;) {
        process.kill(pid, "SIGSTOP");
        await stopped(pid);
        const locked = kind === "SQLite" && writeLockHolder(p.db) === pid;
        if (!locked && (await midTrajectory())) break;
        process.kill(pid, "SIGCONT");
        await sleep(20);
      }
      const frozenAt = performance.now();

      await sleep(frozenAt + STALE_MS - performance.now());
      const takeover = await runCli(["resume", runId, ...store.args], { cwd: p.dir, env });
      expect(takeover.code, takeover.stderr).toBe(0);
      expect(takeover.stdout).toMatch(/steps replayed/);
      const attempts = await store.attempts();
      expect(keysOf(attempts).size).toBe(N);
      expect(attempts).toHaveLength(N);
      const journal = await store.journal();
      expect(journal).toHaveLength(N * STEPS); // each key's trajectory once, replayed or not
      expect(journal.every((r) => r.attempt !== null)).toBe(true);

      // Continued, the old owner's in-flight steps finish and are refused; it exits 5.
      process.kill(pid, "SIGCONT");
      const end = await owner.done;
      expect(end.code, end.stderr).toBe(5);
      expect(end.stderr).toContain(`run ${runId} was taken over`);
      expect(await store.journal()).toEqual(journal);
      expect(await store.attempts()).toEqual(attempts);
      expect(await store.run(runId)).toMatchObject({ status: "completed", owner_token: null });
    });
  });
}
