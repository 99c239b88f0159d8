import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts, rawRun } from "./helpers/eval-project.js";
import { until } from "./helpers/wait.js";

// The default stale limit (30 s, when STET_STALE_MS is unset) as the CLI applies it to an owner
// on another host: its pid means nothing here, so only the heartbeat's age tells.

const N = 20;
const OTHER_HOST = "stet-other-host#00000000";
// STET_STALE_MS unset, whatever the environment running the tests says.
const ENV = { STET_STALE_MS: undefined };

const EVAL = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "stale-default",
  dataset: "./data.jsonl",
  // 500 ms a sample, two at a time: ~5 s of work, so the owner is killed with work left.
  solver: async (sample) => {
    await new Promise((r) => setTimeout(r, 500));
    return String(sample.input).replace("question", "answer");
  },
  scorers: [scorers.exact()],
  concurrency: 2,
});
`;

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

/**
 * Sets the owner's heartbeat `ageMs` old on the store's clock (SQLite: ms since the epoch on the
 * clock of the process reading it, this machine's), and with `hold` keeps it that old until the
 * returned function is called, however long the CLI takes to start. Only a row still owned by
 * OTHER_HOST is touched, so a takeover is never undone.
 */
function ageHeartbeat(db: string, runId: string, ageMs: number, hold = false): () => void {
  const conn = new Database(db, { fileMustExist: true });
  conn.pragma("busy_timeout = 5000");
  const update = conn.prepare("UPDATE runs SET heartbeat_at = ? WHERE id = ? AND owner_host = ?");
  const write = () => update.run(Date.now() - ageMs, runId, OTHER_HOST);
  expect(write().changes).toBe(1);
  const timer = hold ? setInterval(write, 20) : undefined;
  return () => {
    clearInterval(timer);
    conn.close();
  };
}

async function showJson(dir: string, runId: string) {
  const shown = await runCli(["show", runId, "--json"], { cwd: dir, env: ENV });
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as {
    status: string;
    note: string | null;
    owner: { host: string; alive: boolean; reason: string; heartbeatAgeMs: number } | null;
  };
}

describe("the default stale limit (STET_STALE_MS unset), through the CLI", () => {
  it("counts another host's owner alive with a 25 s old heartbeat and dead with a 31 s old one", async () => {
    const p = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(N) });
    cleanups.push(p.cleanup);

    // A run left with work to do by a SIGKILLed owner, which then moves to another host.
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env: ENV });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    await until(() => rawAttempts(p.db).length >= 2, "two committed attempts");
    cli.child.kill("SIGKILL");
    expect((await cli.done).signal).toBe("SIGKILL");
    const conn = new Database(p.db, { fileMustExist: true });
    conn
      .prepare("UPDATE runs SET owner_host = ?, owner_pid = 4242 WHERE id = ?")
      .run(OTHER_HOST, runId);
    conn.close();
    const stored = rawAttempts(p.db);
    expect(stored.length).toBeLessThan(N);

    // 25 s old, kept so while the CLI runs: under the default 30 s, alive. (The 5 s left are for
    // this process's rewrites, which a loaded machine delays; a heartbeat only gets older.)
    const release = ageHeartbeat(p.db, runId, 25_000, true);
    cleanups.push(release);
    const alive = await showJson(p.dir, runId);
    expect(alive.status).toBe("running");
    expect(alive.owner).toMatchObject({ host: OTHER_HOST, alive: true });
    expect(alive.owner!.heartbeatAgeMs).toBeGreaterThanOrEqual(25_000);
    expect(alive.owner!.heartbeatAgeMs).toBeLessThan(30_000);
    const refused = await runCli(["resume", runId], { cwd: p.dir, env: ENV });
    expect(refused.code, refused.stderr).toBe(5);
    expect(refused.stderr).toMatch(
      new RegExp(`pid 4242 on ${OTHER_HOST}, heartbeat 2\\d\\.\\ds ago`),
    );
    release();
    expect(rawAttempts(p.db)).toEqual(stored);
    expect(rawRun(p.db, runId)).toMatchObject({ status: "running", owner_host: OTHER_HOST });

    // 31 s old: over the default 30 s, dead. `stet show` reports it dead, or (where a read
    // recovers a dead owner's run) has already interrupted the run, naming the same reason.
    ageHeartbeat(p.db, runId, 31_000)();
    const dead = await showJson(p.dir, runId);
    const reason = /its heartbeat is 3\ds old \(stale after 30s\)/;
    if (dead.owner) {
      expect(dead.owner).toMatchObject({ host: OTHER_HOST, alive: false });
      expect(dead.owner.reason).toMatch(reason);
    } else {
      expect(dead.status).toBe("interrupted");
      expect(dead.note).toMatch(reason);
    }
    const resumed = await runCli(["resume", runId], { cwd: p.dir, env: ENV });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`plan: ${stored.length} preserved`);
    const after = rawAttempts(p.db);
    expect(after).toHaveLength(N);
    expect(new Set(after.map((a) => a.sample_id)).size).toBe(N);
    expect(after.filter((a) => stored.some((s) => s.sample_id === a.sample_id))).toEqual(stored);
    expect(rawRun(p.db, runId)).toMatchObject({ status: "completed", owner_host: null });
  });
});
