import { spawnSync } from "node:child_process";
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "../../test/helpers/postgres.js";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { StetError } from "../core/errors.js";
import type { Key } from "../core/types.js";
import {
  draft,
  errorDraft,
  owner,
  runConfig,
  sampleRecords,
  sleep,
} from "../store/contract/fixtures.js";
import { openPostgresStore } from "../store/postgres/index.js";
import { requireLeases, type Store } from "../store/types.js";
import { LeaseSource, planSource } from "./lease-source.js";
import { hostId } from "./owner.js";

const store = storesPerTest();

/** A distributed run of `n` keys (one epoch), let go by its creator, open to workers. */
async function distributed(s: Store, n: number) {
  const ids = Array.from({ length: n }, (_, i) => `s${i + 1}`);
  const run = await s.runs.create({
    id: `r_${Math.random().toString(36).slice(2)}`,
    config: runConfig({ distributed: true, epochs: 1 }),
    samples: sampleRecords(ids),
    owner: owner("creator"),
  });
  await s.runs.release(run.id, run.owner!.token, "interrupted");
  await requireLeases(s).reopen(run.id);
  return run.id;
}

async function worker(s: Store, runId: string, name: string, pid = process.pid) {
  const identity = { ...owner(name), host: hostId(), pid, concurrency: 2, leaseMs: 60_000 };
  await requireLeases(s).register(runId, identity);
  return identity;
}

/** Every key the source gives until it says none is left, each ended as `end` says. */
async function takeAll(source: LeaseSource, end: (key: Key) => Promise<void>): Promise<string[]> {
  const taken: string[] = [];
  for (;;) {
    const key = await source.next(() => false);
    if (!key) return taken;
    taken.push(`${key.sampleId}#${key.epoch}`);
    await end(key);
  }
}

describe("LeaseSource (a real SQLite store)", () => {
  it("claims a batch at a time, ahead of need, and gives every key of the run once", async () => {
    const s = store();
    const runId = await distributed(s, 7);
    const me = await worker(s, runId, "alpha");
    const claims: number[] = [];
    const source = new LeaseSource({
      store: s,
      runId,
      token: me.token,
      batch: 3,
      pollMs: 5,
      onFirstClaim: (_, keys) => claims.push(keys),
    });
    const taken = await takeAll(source, async (key) => {
      await s.attempts.record(runId, me.token, [draft(key)]);
      await source.done(key, "scored");
    });
    expect(claims).toEqual([3]);
    expect(taken.sort()).toEqual(["s1", "s2", "s3", "s4", "s5", "s6", "s7"].map((id) => `${id}#1`));
    expect(source.open()).toBe(0);
  });

  it("an errored key settles its lease (its outcome is final); an abandoned one stays the worker's until it leaves", async () => {
    const s = store();
    const runId = await distributed(s, 2);
    const me = await worker(s, runId, "alpha");
    const source = new LeaseSource({ store: s, runId, token: me.token, batch: 2, pollMs: 5 });
    const first = (await source.next(() => false))!;
    const second = (await source.next(() => false))!;
    await s.attempts.record(runId, me.token, [errorDraft(first), errorDraft(second)]);
    await source.done(first, "errored");
    await source.done(second, "abandoned");
    // The settled key is no longer open; the abandoned one is, and no one else may claim it yet.
    const other = await worker(s, runId, "beta");
    expect(await requireLeases(s).claim(runId, other.token, 5)).toMatchObject({
      keys: [],
      open: 1,
    });
    await requireLeases(s).leave(runId, me.token, "stopped");
    expect((await requireLeases(s).claim(runId, other.token, 5)).keys).toEqual([second]);
  });

  it("an errored key whose lease the store would not settle is not waited for: none is left once the rest are done", async () => {
    const s = store();
    const runId = await distributed(s, 3);
    const me = await worker(s, runId, "alpha");
    let settles = 0;
    const leases = new Proxy(requireLeases(s), {
      get(target, name, receiver) {
        if (name !== "settle") return Reflect.get(target, name, receiver) as unknown;
        return async () => {
          settles++;
          throw new StetError("E_STORE", "deadlock detected");
        };
      },
    });
    const failing = Object.assign(Object.create(s) as Store, { leases });
    const source = new LeaseSource({ store: failing, runId, token: me.token, batch: 3, pollMs: 5 });
    const ended = takeAll(source, async (key) => {
      if (key.sampleId !== "s2") {
        await s.attempts.record(runId, me.token, [draft(key)]);
        return source.done(key, "scored");
      }
      await s.attempts.record(runId, me.token, [errorDraft(key)]);
      await expect(source.done(key, "errored")).rejects.toMatchObject({ code: "E_STORE" });
    });
    // Before, the open lease it could not settle looked like another worker's: it waited for good.
    const taken = await Promise.race([ended, sleep(20_000).then(() => "still waiting")]);
    expect(taken).toEqual(["s1#1", "s2#1", "s3#1"]);
    expect(settles).toBe(5); // tried again as a claim is, then given up
    // The lease stays the worker's until it leaves; then another may claim the key.
    const other = await worker(s, runId, "beta");
    await requireLeases(s).leave(runId, me.token, "finished");
    expect((await requireLeases(s).claim(runId, other.token, 5)).keys).toEqual([
      { sampleId: "s2", epoch: 1 },
    ]);
  }, 30_000);

  it("waits for keys another live worker holds, and says none left once they have their outcome", async () => {
    const real = store();
    const runId = await distributed(real, 3);
    const other = await worker(real, runId, "beta");
    const held = (await requireLeases(real).claim(runId, other.token, 1)).keys;
    const me = await worker(real, runId, "alpha");
    // The real store, its claims counted: a poll while waiting is a claim that got nothing.
    let claims = 0;
    let polled: () => void = () => {};
    const leases = requireLeases(real);
    const s: Store = {
      ...real,
      leases: {
        ...leases,
        claim: async (...args) => {
          const claim = await leases.claim(...args);
          claims++;
          polled();
          return claim;
        },
      },
    };
    const source = new LeaseSource({ store: s, runId, token: me.token, batch: 4, pollMs: 5 });
    const mine: Key[] = [(await source.next(() => false))!, (await source.next(() => false))!];
    await real.attempts.record(
      runId,
      me.token,
      mine.map((key) => draft(key)),
    );
    for (const key of mine) await source.done(key, "scored");
    let answered = false;
    const last = Promise.resolve(source.next(() => false)).then((key) => {
      answered = true;
      return key;
    });
    // Two more claims that found the other worker's key open: the source is still waiting.
    const seen = claims;
    await new Promise<void>((resolve) => (polled = () => claims >= seen + 2 && resolve()));
    expect(answered).toBe(false);
    await real.attempts.record(runId, other.token, [draft(held[0]!)]);
    expect(await last).toBeUndefined();
  });

  it("expires the leases of a dead worker on this host and claims its keys", async () => {
    const s = store();
    const runId = await distributed(s, 2);
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    const dead = await worker(s, runId, "dead", gone);
    expect((await requireLeases(s).claim(runId, dead.token, 2)).keys).toHaveLength(2);
    const me = await worker(s, runId, "alpha");
    const source = new LeaseSource({ store: s, runId, token: me.token, batch: 2, pollMs: 5 });
    const taken = await takeAll(source, async (key) => {
      await s.attempts.record(runId, me.token, [draft(key)]);
      await source.done(key, "scored");
    });
    expect(taken.sort()).toEqual(["s1#1", "s2#1"]);
    const workers = await requireLeases(s).list(runId);
    expect(workers.find((w) => w.token === dead.token)).toMatchObject({ state: "lost" });
  });

  it("gives nothing once halted", async () => {
    const s = store();
    const runId = await distributed(s, 2);
    const me = await worker(s, runId, "alpha");
    const source = new LeaseSource({ store: s, runId, token: me.token, batch: 2, pollMs: 5 });
    expect(await source.next(() => true)).toBeUndefined();
    const plan = planSource([{ sampleId: "s1", epoch: 1 }]);
    expect(plan.next(() => true)).toBeUndefined();
    expect(plan.next(() => false)).toEqual({ sampleId: "s1", epoch: 1 });
    expect(plan.next(() => false)).toBeUndefined();
  });
});

describe.skipIf(SKIP_POSTGRES)("LeaseSource (PostgreSQL)", () => {
  it("waits for a claim in flight before the worker leaves: no key stays leased to a worker that left", async () => {
    const { schema, drop } = testSchema();
    const s = openPostgresStore(TEST_POSTGRES_URL, { schema });
    const db = new pg.Client({
      connectionString: TEST_POSTGRES_URL,
      options: `-c search_path=${schema}`,
    });
    onTestFinished(async () => {
      await db.end();
      await s.close();
      await drop();
    });
    const leases = requireLeases(s);
    const runId = await distributed(s, 4);
    const me = await worker(s, runId, "alpha");
    const gone = { ...owner("gone"), host: hostId(), pid: process.pid, concurrency: 1, leaseMs: 1 };
    await leases.register(runId, gone);
    const source = new LeaseSource({ store: s, runId, token: me.token, batch: 2, pollMs: 5 });
    expect(await source.next(() => false)).toEqual({ sampleId: "s1", epoch: 1 });
    // s3 is leased to a worker whose lease ran out: the next claim takes it over and marks that
    // worker lost, and so waits while another transaction holds the worker's row.
    expect((await leases.claim(runId, gone.token, 1)).keys).toEqual([{ sampleId: "s3", epoch: 1 }]);
    await sleep(20);
    await db.connect();
    const [{ pid: blocker }] = (await db.query("SELECT pg_backend_pid() AS pid")).rows;
    await db.query("BEGIN");
    await db.query("SELECT 1 FROM workers WHERE token = $1 FOR UPDATE", [gone.token]);
    // The last buffered key: a claim ahead of need starts, and waits on the held row.
    expect(await source.next(() => false)).toEqual({ sampleId: "s2", epoch: 1 });
    const probe = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await probe.connect();
    onTestFinished(() => probe.end());
    for (;;) {
      const waiting = await probe.query(
        "SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        [blocker],
      );
      if (waiting.rowCount! > 0) break;
      await sleep(10);
    }
    // The worker stops and leaves as `workRun` does: the source closed first.
    let left = false;
    const leaving = source.close().then(async () => {
      await leases.leave(runId, me.token, "stopped");
      left = true;
    });
    await sleep(100);
    expect(left).toBe(false);
    await db.query("COMMIT");
    await leaving;
    const held = await db.query("SELECT sample_id FROM leases WHERE token = $1 AND done = 0", [
      me.token,
    ]);
    expect(held.rows).toEqual([]);
    expect(await leases.closeRun(runId, "interrupted")).toBe(true);
  });
});
