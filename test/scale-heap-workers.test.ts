import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { capped, committed, waitForCommitted } from "./helpers/capped-cli.js";
import { perTest } from "./helpers/eval-project.js";

// Issue 34, flat memory for distributed runs: `stet run --distributed` of a dataset file of 8 MiB
// and up creates the run from the file's pages, and each worker (the creator, and `stet worker`
// joining it) plans from the run's figures and finds the keys leased to it in the snapshot, a
// page at a time. 120,000 keys of a 13 MB file here, each process's heap capped at 32 MB: main at
// dae6ff6 (which loaded the file, and whose workers read every sample and attempt of the run) ran
// the creator out of heap under 32 and 48 MB (at 200,000 keys of 9 MB it needed 65-80 MB, and a
// joining worker ran out of 64). The creator is SIGKILLed once the worker has joined: the worker
// takes its leases over (a dead pid on this host) and finishes the run. Not timed: it asserts that
// each process finishes and that every key was executed once.

const KEYS = 120_000;
const HEAP_MB = 32;

const EVAL = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "distributed-scale",
  dataset: "./data.jsonl",
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 64,
});
`;

const { project } = perTest();

/** `n` rows of 110 bytes or so: 120,000 make a 13 MB file, over the 8 MiB that pages it. */
function paddedData(n: number): string {
  const pad = "x".repeat(28);
  let out = "";
  for (let i = 0; i < n; i++)
    out += `{"id":"s${i}","input":"q ${i} ${pad}","target":"q ${i} ${pad}"}\n`;
  return out;
}

/** The run's id and its workers' states, read from the store file. */
function runOf(db: string): { id: string; workers: string[] } {
  const store = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const { id } = store.prepare("SELECT id FROM runs").get() as { id: string };
    const rows = store.prepare("SELECT state FROM workers ORDER BY started_at").all();
    return { id, workers: (rows as { state: string }[]).map((r) => r.state) };
  } finally {
    store.close();
  }
}

describe("a distributed run of 120,000 keys with each process's heap capped", () => {
  it(`run --distributed and stet worker (--max-old-space-size=${HEAP_MB}), the creator SIGKILLed`, async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": paddedData(KEYS) });
    const creator = capped(p.dir, ["run", "eval.mjs", "--distributed"], HEAP_MB);
    await waitForCommitted(p.db, KEYS / 10, creator);
    const runId = runOf(p.db).id;
    const worker = capped(p.dir, ["worker", "--run", runId], HEAP_MB);
    // Once the worker has committed some keys of its own, the creator dies mid-run.
    const joined = committed(p.db);
    await waitForCommitted(p.db, joined + 5_000, worker);
    creator.child.kill("SIGKILL");
    const killed = await creator.done;
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    expect(committed(p.db)).toBeLessThan(KEYS);

    const finished = await worker.done;
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stdout).toContain("status   completed");
    // One attempt a key: the keys the creator held when it died were executed once, by the worker.
    expect(committed(p.db)).toBe(KEYS);
    // The creator is marked lost (its leases expired at once: its pid is gone), the worker finished.
    expect(runOf(p.db).workers).toEqual(["lost", "finished"]);

    const shown = await capped(p.dir, ["show", runId, "--json"], HEAP_MB).done;
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      status: "completed",
      counts: { total: KEYS, scored: KEYS, errored: 0, remaining: 0 },
    });
  }, 600_000);
});
