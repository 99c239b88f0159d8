import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { tempStore } from "../../test/helpers/temp-store.js";
import type { Owner } from "../core/types.js";
import { newRun, owner as foreignOwner } from "../store/contract/fixtures.js";
import { heartbeatInterval, hostId, judgeOwner, ownerLiveness } from "./owner.js";

const stale = { staleMs: 10_000 };

function owner(overrides: Partial<Owner>): Owner {
  return {
    host: "elsewhere#00000000",
    pid: 4242,
    token: "t",
    heartbeatAt: new Date().toISOString(),
    heartbeatAgeMs: 0,
    ...overrides,
  };
}

describe("ownerLiveness", () => {
  it("takes a gone pid on this host as dead at once, fresh heartbeat or not", () => {
    const gone = spawnSync(process.execPath, ["-e", ""]).pid!;
    expect(ownerLiveness(owner({ host: hostId(), pid: gone }), stale)).toEqual({
      alive: false,
      reason: `pid ${gone} is gone`,
    });
  });

  it.each([
    ["an old heartbeat", 10_001, /heartbeat is 10s old \(stale after 10s\)/],
    [
      "a heartbeat further in the future than the limit",
      -10_001,
      /10s in the future .*a clock moved/,
    ],
  ])("presumes %s dead, unconfirmed, even on this host with its pid alive", (_, age, reason) => {
    for (const host of ["elsewhere#00000000", hostId()]) {
      const judged = ownerLiveness(owner({ host, pid: process.pid, heartbeatAgeMs: age }), stale);
      expect(judged).toMatchObject({ alive: false, unconfirmed: true });
      expect(judged.reason).toMatch(reason);
    }
  });

  it("takes a heartbeat within the limit, either side of now, as alive", () => {
    expect(ownerLiveness(owner({ heartbeatAgeMs: 9_000 }), stale).alive).toBe(true);
    expect(ownerLiveness(owner({ heartbeatAgeMs: -9_000 }), stale)).toMatchObject({
      alive: true,
      reason: "host elsewhere#00000000 pid 4242 heartbeat 9s in the future",
    });
  });
});

describe("heartbeatInterval", () => {
  it("beats every 2 s, or four times per stale limit when that is shorter", () => {
    expect(heartbeatInterval({})).toBe(2_000);
    expect(heartbeatInterval({ staleMs: 30_000 })).toBe(2_000);
    expect(heartbeatInterval({ staleMs: 1_500 })).toBe(375);
    expect(heartbeatInterval({ staleMs: 1_500, heartbeatMs: 50 })).toBe(50);
  });
});

describe("judgeOwner", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  /** A run on a real store, its owner on another host, as read when its heartbeat was `ageMs` old. */
  async function staleRun(ageMs: number) {
    const opened = tempStore();
    cleanups.push(opened.cleanup);
    const { run, owner: me } = await newRun(opened.store);
    const read = await opened.store.runs.get(run.id);
    const seen = { ...read!, owner: { ...read!.owner!, heartbeatAgeMs: ageMs } };
    return { store: opened.store, run: seen, token: me.token };
  }
  const watch = { staleMs: 1_000, heartbeatMs: 100 };
  /**
   * Watching for up to a minute, for the tests where something happens while the owner is
   * watched: it ends as soon as it does, and a loaded machine cannot make it come too late.
   */
  const watchLong = { staleMs: 60_000, heartbeatMs: 30_000 };

  it("confirms a death when the heartbeat does not move for twice the interval", async () => {
    const { store, run } = await staleRun(3_600_000);
    const started = performance.now();
    expect(await judgeOwner(store, run, watch)).toEqual({
      alive: false,
      reason: "its heartbeat is 3600s old (stale after 1s), and it did not beat in 0.2s",
      watched: true,
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(199);
  });

  it("finds the owner alive when it beats while watched, whatever the age read", async () => {
    const { store, run, token } = await staleRun(-3_600_000);
    const judging = judgeOwner(store, run, watchLong);
    await new Promise((r) => setTimeout(r, 5));
    await store.runs.heartbeat(run.id, token);
    const judged = await judging;
    expect(judged).toMatchObject({ alive: true, watched: true });
    expect(judged.reason).toMatch(/in the future .* yet it beat again while watched/);
  });

  it("leaves a run that changed hands while watched to its new owner", async () => {
    const { store, run, token } = await staleRun(3_600_000);
    const judging = judgeOwner(store, run, watchLong);
    await store.runs.claim(run.id, foreignOwner("other"), token);
    expect(await judging).toMatchObject({
      alive: true,
      reason: expect.stringMatching(/changed hands/),
    });
  });

  it("does not watch an owner whose heartbeat is fresh", async () => {
    const { store, run } = await staleRun(0);
    // Watching would last an hour (the test would time out), and the judgement would say so.
    const judged = await judgeOwner(store, run, { staleMs: 3_600_000, heartbeatMs: 3_600_000 });
    expect(judged.alive).toBe(true);
    expect(judged).not.toHaveProperty("watched");
  });
});
