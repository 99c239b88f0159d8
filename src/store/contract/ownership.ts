import { describe, expect, it } from "vitest";
import type { Store } from "../types.js";
import { draft, type HarnessRef, newRun, owner, sampleRecords, sleep } from "./fixtures.js";

/** Writes a former owner might still attempt after losing the run; each must be refused. */
const lateWrites: [string, (store: Store, runId: string, token: string) => Promise<unknown>][] = [
  ["recordAttempts", (s, id, t) => s.attempts.record(id, t, [draft({ sampleId: "s1", epoch: 1 })])],
  ["markInflight", (s, id, t) => s.runs.markInflight(id, t, [{ sampleId: "s2", epoch: 1 }])],
  ["updateSamples", (s, id, t) => s.runs.updateSamples(id, t, sampleRecords(["s1"], 9))],
];

export function describeOwnershipContract(h: HarnessRef): void {
  describe("ownership", () => {
    claimAndReleaseCases(h);
    fencingCases(h);
  });
}

/** Claims, heartbeats, releases and orphans. */
function claimAndReleaseCases(h: HarnessRef): void {
  it("claims an ownerless run with a null expected token", async () => {
    const { run, owner: first } = await newRun(h.store, { id: "free" });
    await h.store.runs.release("free", first.token, "interrupted", "stopped by SIGINT");
    await sleep(5);
    const next = owner("next");
    expect(await h.store.runs.claim("free", next, null)).toBe(true);
    const claimed = await h.store.runs.get("free");
    expect(claimed).toMatchObject({ status: "running", note: null, owner: { ...next } });
    expect(claimed?.owner?.heartbeatAgeMs).toBeLessThan(5_000);
    expect(claimed?.updatedAt).not.toBe(run.updatedAt);
  });

  it.each([
    ["null while someone owns the run", null],
    ["a token that is not the owner's", "stale-token"],
  ])("refuses a claim expecting %s and changes nothing", async (_label, expected) => {
    await newRun(h.store, { id: "held" });
    const before = await h.store.runs.get("held");
    expect(await h.store.runs.claim("held", owner("thief"), expected)).toBe(false);
    expect(await h.store.runs.get("held")).toMatchObject({
      ...before,
      owner: { token: before?.owner?.token },
    });
  });

  it("refuses a claim of an unknown run", async () => {
    expect(await h.store.runs.claim("ghost", owner(), null)).toBe(false);
  });

  it.each(["an ownerless run", "a dead owner's run"])(
    "lets exactly one of two racing instances claim %s",
    async (kind) => {
      const { owner: dead } = await newRun(h.store, { id: "race" });
      const expected = kind === "an ownerless run" ? null : dead.token;
      if (expected === null) await h.store.runs.interruptOrphan("race", dead.token, "owner died");
      const [a, b] = [await h.connect(), await h.connect()];
      const [ownerA, ownerB] = [owner("a"), owner("b")];
      const wins = await Promise.all([
        a.runs.claim("race", ownerA, expected),
        b.runs.claim("race", ownerB, expected),
      ]);
      expect(wins.filter(Boolean)).toHaveLength(1);
      const winner = wins[0] ? ownerA : ownerB;
      expect(await h.store.runs.get("race")).toMatchObject({ status: "running", owner: winner });
    },
  );

  it("refreshes the heartbeat for the owner only", async () => {
    const { run, owner: me } = await newRun(h.store, { id: "hb" });
    await sleep(100);
    expect(await h.store.runs.heartbeat("hb", "not-mine")).toEqual({ owned: false });
    expect(await h.store.runs.heartbeat("ghost", me.token)).toEqual({ owned: false });
    // The refused heartbeats left it as it was, and it has aged.
    const before = (await h.store.runs.get("hb"))?.owner;
    expect(before?.heartbeatAt).toBe(run.owner?.heartbeatAt);
    expect(before?.heartbeatAgeMs).toBeGreaterThanOrEqual(90);

    const started = performance.now();
    expect(await h.store.runs.heartbeat("hb", me.token)).toEqual({
      owned: true,
      cancelRequested: null,
    });
    const after = (await h.store.runs.get("hb"))?.owner;
    const elapsed = performance.now() - started;
    // The new heartbeat is later than the old one by at least the age read before the call
    // (heartbeatAt is whole milliseconds, hence the 1 ms), so its age started again from zero:
    // it is no older than the time the heartbeat and the read took, however long that was.
    const advanced = Date.parse(after?.heartbeatAt ?? "") - Date.parse(before?.heartbeatAt ?? "");
    expect(advanced).toBeGreaterThan(before!.heartbeatAgeMs - 1);
    expect(after!.heartbeatAgeMs).toBeLessThanOrEqual(elapsed + 1);
  });

  it("releases for the owner only, setting status and note", async () => {
    const { owner: me } = await newRun(h.store, { id: "rel" });
    const before = await h.store.runs.get("rel");
    expect(await h.store.runs.release("rel", "not-mine", "completed")).toBe(false);
    expect(await h.store.runs.get("rel")).toMatchObject({
      status: "running",
      owner: { token: me.token },
    });
    expect(before?.owner?.token).toBe(me.token);

    expect(await h.store.runs.release("rel", me.token, "errored", "3 samples errored")).toBe(true);
    expect(await h.store.runs.get("rel")).toMatchObject({
      status: "errored",
      note: "3 samples errored",
      owner: null,
    });
    expect(await h.store.runs.release("rel", me.token, "completed")).toBe(false);
  });

  it("refuses to release a run into the running status", async () => {
    const { owner: me } = await newRun(h.store, { id: "still" });
    await expect(h.store.runs.release("still", me.token, "running")).rejects.toMatchObject({
      code: "E_ILLEGAL_TRANSITION",
    });
    expect(await h.store.runs.get("still")).toMatchObject({ owner: { token: me.token } });
  });

  it("interrupts an orphan only while its token is unchanged", async () => {
    const { owner: dead } = await newRun(h.store, { id: "orphan" });
    expect(await h.store.runs.interruptOrphan("orphan", "other-token", "owner died")).toBe(false);
    expect(await h.store.runs.get("orphan")).toMatchObject({
      status: "running",
      owner: { token: dead.token },
    });

    expect(await h.store.runs.interruptOrphan("orphan", dead.token, "pid 4242 is gone")).toBe(true);
    expect(await h.store.runs.get("orphan")).toMatchObject({
      status: "interrupted",
      note: "pid 4242 is gone",
      owner: null,
    });
  });

  it("does not interrupt a run that a new owner claimed meanwhile", async () => {
    const { owner: dead } = await newRun(h.store, { id: "taken" });
    const next = owner("next");
    expect(await h.store.runs.claim("taken", next, dead.token)).toBe(true);
    expect(await h.store.runs.interruptOrphan("taken", dead.token, "too late")).toBe(false);
    expect(await h.store.runs.get("taken")).toMatchObject({
      status: "running",
      note: null,
      owner: next,
    });
  });
}

/** A former owner, fenced. */
function fencingCases(h: HarnessRef): void {
  describe("fencing a former owner", () => {
    it.each(lateWrites)("rejects %s with E_FENCED and writes nothing", async (_name, write) => {
      const { owner: old } = await newRun(h.store, { id: "fenced" });
      const next = owner("next");
      await h.store.runs.claim("fenced", next, old.token);
      const before = {
        attempts: await h.store.reads.listAttempts("fenced"),
        inflight: await h.store.runs.listInflight("fenced"),
        samples: await h.store.reads.getSamples("fenced"),
      };
      const late = await h.connect();
      await expect(write(late, "fenced", old.token)).rejects.toMatchObject({ code: "E_FENCED" });
      expect({
        attempts: await h.store.reads.listAttempts("fenced"),
        inflight: await h.store.runs.listInflight("fenced"),
        samples: await h.store.reads.getSamples("fenced"),
      }).toEqual(before);
      expect(await late.runs.heartbeat("fenced", old.token)).toEqual({ owned: false });
      expect(await late.runs.release("fenced", old.token, "interrupted")).toBe(false);
      expect(await h.store.runs.get("fenced")).toMatchObject({ status: "running", owner: next });
    });

    it.each(lateWrites)("rejects %s on an unknown run with E_RUN_NOT_FOUND", async (_n, write) => {
      await expect(write(h.store, "ghost", "any")).rejects.toMatchObject({
        code: "E_RUN_NOT_FOUND",
      });
    });
  });
}
