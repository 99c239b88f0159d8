import { describe, expect, it } from "vitest";
import {
  draft,
  errorDraft,
  owner,
  runConfig,
  sampleRecords,
  sleep,
  type HarnessRef,
} from "./fixtures.js";
import { requireLeases } from "../types.js";

/** Per-key leases of a distributed run: claims, expiry, the fence of a worker's commits. */
export function describeLeaseContract(h: HarnessRef): void {
  const distributedRun = async (id: string, samples: number) => {
    const ids = Array.from({ length: samples }, (_, i) => `s${String(i).padStart(3, "0")}`);
    const run = await h.store.runs.create({
      id,
      config: runConfig({ distributed: true, epochs: 1 }),
      samples: sampleRecords(ids),
      owner: owner("creator"),
    });
    // A distributed run has no owner: its workers hold leases.
    await h.store.runs.release(id, run.owner!.token, "interrupted");
    expect(await requireLeases(h.store).reopen(id)).toBe(true);
    return ids;
  };
  const join = (runId: string, name: string, leaseMs?: number) => joinRun(h, runId, name, leaseMs);

  describe("workers and key leases", () => {
    it("claims keys in batches, never one key twice, and fences commits by lease", async () => {
      await distributedRun("l1", 10);
      const a = await join("l1", "a");
      const b = await join("l1", "b");
      const first = await requireLeases(h.store).claim("l1", a.token, 4);
      const second = await requireLeases(h.store).claim("l1", b.token, 4);
      expect(first.keys).toHaveLength(4);
      expect(second.keys).toHaveLength(4);
      const all = [...first.keys, ...second.keys].map((k) => `${k.sampleId}/${k.epoch}`);
      expect(new Set(all).size).toBe(8);
      await expect(
        h.store.attempts.record("l1", b.token, [draft(first.keys[0]!)]),
      ).rejects.toMatchObject({
        code: "E_FENCED",
      });
      const [stored] = await h.store.attempts.record("l1", a.token, [draft(first.keys[0]!)]);
      expect(stored?.status).toBe("scored");
      // Again, after a commit of the run (a store that caches what it read of the run must still fence).
      await expect(
        h.store.attempts.record("l1", b.token, [draft(first.keys[1]!)]),
      ).rejects.toMatchObject({ code: "E_FENCED" });
      await expect(
        h.store.attempts.record("l1", "nobody", [draft(first.keys[1]!)]),
      ).rejects.toMatchObject({ code: "E_FENCED" });
      const [next] = await h.store.attempts.record("l1", a.token, [draft(first.keys[1]!)]);
      expect(next).toMatchObject({ sampleId: first.keys[1]!.sampleId, attempt: 1 });
      expect(await h.store.reads.listAttempts("l1")).toHaveLength(2);
      const workers = await requireLeases(h.store).list("l1");
      expect(workers.find((w) => w.token === a.token)).toMatchObject({ keysDone: 2, rejected: 0 });
      expect(workers.find((w) => w.token === b.token)).toMatchObject({ rejected: 2 });
    });

    it("counts the open keys when asked, and always when a claim comes back short", async () => {
      await distributedRun("lc", 6);
      const a = await join("lc", "a");
      const b = await join("lc", "b");
      const leases = requireLeases(h.store);
      expect(await leases.claim("lc", a.token, 2)).toMatchObject({ open: 6, leasedElsewhere: 0 });
      const full = await leases.claim("lc", b.token, 2, { count: false });
      expect(full.keys).toHaveLength(2);
      expect(full.open).toBeUndefined();
      expect(full.leasedElsewhere).toBeUndefined();
      // Three asked for, two left: counted whatever was asked (what tells a worker it is done).
      const short = await leases.claim("lc", a.token, 3, { count: false });
      expect(short.keys).toHaveLength(2);
      expect(short).toMatchObject({ open: 6, leasedElsewhere: 2 });
      expect(await leases.claim("lc", a.token, 1, { count: false })).toMatchObject({
        keys: [],
        open: 6,
      });
    });

    it("expires a lease without heartbeat: taken over, the late commit rejected", async () => {
      await distributedRun("l2", 3);
      const slow = await join("l2", "slow", 200);
      const [done, key] = (await requireLeases(h.store).claim("l2", slow.token, 2)).keys;
      // One commit first: the late one follows the worker's own earlier commit of the run.
      await h.store.attempts.record("l2", slow.token, [draft(done!)]);
      expect(await h.store.runs.heartbeat("l2", slow.token)).toMatchObject({ owned: true });
      await sleep(300);
      const fast = await join("l2", "fast");
      const taken = await requireLeases(h.store).claim("l2", fast.token, 2);
      expect(taken.keys).toContainEqual(key);
      await expect(h.store.attempts.record("l2", slow.token, [draft(key!)])).rejects.toMatchObject({
        code: "E_FENCED",
      });
      expect(await h.store.runs.heartbeat("l2", slow.token)).toEqual({ owned: false });
      expect(await h.store.reads.listAttempts("l2")).toHaveLength(1);
    });

    it("hands each key to one worker in a 16-way claim race", async () => {
      await distributedRun("l3", 64);
      const workers = await Promise.all(Array.from({ length: 16 }, (_, i) => join("l3", `w${i}`)));
      const stores = await Promise.all(workers.map(() => h.connect()));
      const claims = await Promise.all(
        workers.map((w, i) => requireLeases(stores[i]!).claim("l3", w.token, 8)),
      );
      const keys = claims.flatMap((c) => c.keys.map((k) => `${k.sampleId}/${k.epoch}`));
      expect(keys).toHaveLength(64);
      expect(new Set(keys).size).toBe(64);
    });

    it("commits two workers' attempts with their journal entries at once, without deadlock", async () => {
      await distributedRun("l4", 40);
      const [a, b] = [await join("l4", "a"), await join("l4", "b")];
      const mine = {
        [a.token]: (await requireLeases(h.store).claim("l4", a.token, 20)).keys,
        [b.token]: (await requireLeases(h.store).claim("l4", b.token, 20)).keys,
      };
      // Each commit inserts its entry (referencing the run) before it takes the run's row lock.
      const commit = (token: string, i: number) => {
        const key = mine[token]![i]!;
        const entry = {
          ...key,
          step: 0,
          name: "chat",
          kind: "chat" as const,
          inputHash: "a".repeat(64),
          input: { i },
          result: { content: "ok", model: "m" },
          error: null,
          usage: null,
          recordedAt: "2025-01-02T00:00:00.000Z",
          durationMs: 1,
        };
        return h.store.attempts.record("l4", token, [draft(key)], {
          steps: { drafts: [entry], discard: [] },
        });
      };
      for (let i = 0; i < 20; i++) await Promise.all([commit(a.token, i), commit(b.token, i)]);
      expect(await h.store.reads.listAttempts("l4")).toHaveLength(40);
      const journal = await h.store.journal.list("l4");
      expect(journal).toHaveLength(40);
      expect(journal.every((e) => e.attempt === 1)).toBe(true);
    });
  });
}

/** Registers worker `name` on a distributed run. */
async function joinRun(h: HarnessRef, runId: string, name: string, leaseMs = 30_000) {
  const worker = { ...owner(name), concurrency: 4, leaseMs };
  await requireLeases(h.store).register(runId, worker);
  return worker;
}

/** A distributed run opened after its creator recorded a seed (`--distributed --resume-from`). */
export function describeSeededLeaseContract(h: HarnessRef): void {
  describe("a seeded distributed run", () => {
    it("opens a seeded run with the seed's scored keys done: no worker is handed one", async () => {
      const ids = ["s0", "s1", "s2", "s3"];
      const run = await h.store.runs.create({
        id: "ls",
        config: runConfig({ distributed: true, epochs: 1 }),
        samples: sampleRecords(ids),
        owner: owner("creator"),
      });
      // The creator records the seed (two keys, one of them an error), then lets go.
      const seed = [draft({ sampleId: "s1", epoch: 1 }), errorDraft({ sampleId: "s2", epoch: 1 })];
      await h.store.attempts.record("ls", run.owner!.token, seed);
      await h.store.runs.release("ls", run.owner!.token, "interrupted");
      expect(await requireLeases(h.store).reopen("ls")).toBe(true);
      const worker = await joinRun(h, "ls", "w");
      const claim = await requireLeases(h.store).claim("ls", worker.token, 10);
      // The errored seed key executes like any other: only a scored one is done.
      expect(claim.keys.map((k) => k.sampleId).sort()).toEqual(["s0", "s2", "s3"]);
      expect(claim).toMatchObject({ open: 3 });
    });
  });
}
