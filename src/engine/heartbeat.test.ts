import { afterEach, describe, expect, it, vi } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { newRun } from "../store/contract/fixtures.js";
import type { Store } from "../store/types.js";
import { startHeartbeat } from "./heartbeat.js";

const store = storesPerTest();

afterEach(() => {
  vi.useRealTimers();
});

/** The real store, its heartbeats counted. */
function counted(real: Store) {
  const beats = { count: 0 };
  const s: Store = {
    ...real,
    runs: {
      ...real.runs,
      heartbeat: (...args) => {
        beats.count++;
        return real.runs.heartbeat(...args);
      },
    },
  };
  return { store: s, beats };
}

// The interval timer is the unit under test: fake timers, against a real SQLite store.
describe("startHeartbeat", () => {
  it("beats every interval, refreshing the owner's heartbeat, and stops cleanly", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "Date"] });
    const real = store();
    const { run, owner } = await newRun(real);
    const { store: s, beats } = counted(real);
    const lost = vi.fn();
    const stop = startHeartbeat({
      store: s,
      runId: run.id,
      token: owner.token,
      intervalMs: 1_000,
      onLost: lost,
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(beats.count).toBe(0);
    const before = (await real.runs.get(run.id))!.owner!.heartbeatAt;
    await vi.advanceTimersByTimeAsync(1);
    expect(beats.count).toBe(1);
    expect((await real.runs.get(run.id))!.owner!.heartbeatAt).not.toBe(before);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(beats.count).toBe(3);
    stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(beats.count).toBe(3);
    expect(lost).not.toHaveBeenCalled();
  });

  it("detects lost ownership once, and beats no more", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const real = store();
    const { run, owner } = await newRun(real);
    const { store: s, beats } = counted(real);
    const lost = vi.fn();
    const stop = startHeartbeat({
      store: s,
      runId: run.id,
      token: owner.token,
      intervalMs: 1_000,
      onLost: lost,
    });
    await vi.advanceTimersByTimeAsync(1_000);
    // The run changes hands: released, as a takeover's claim would leave it for another token.
    await real.runs.release(run.id, owner.token, "interrupted");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lost).toHaveBeenCalledTimes(1);
    const count = beats.count;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(beats.count).toBe(count);
    expect(lost).toHaveBeenCalledTimes(1);
    stop();
  });

  it("passes on a cancel request the first time a beat reads it, and only then", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const real = store();
    const { run, owner } = await newRun(real);
    const cancels: string[] = [];
    const stop = startHeartbeat({
      store: real,
      runId: run.id,
      token: owner.token,
      intervalMs: 1_000,
      onLost: () => {},
      onCancel: (request) => cancels.push(request),
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(cancels).toEqual([]);
    expect(await real.runs.requestCancel(run.id, owner.token, "ann at 12:00")).toBe(true);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(cancels).toEqual(["ann at 12:00"]);
    stop();
  });

  it("a beat that fails is reported, and the next one tries again", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "Date"] });
    const real = store();
    const { run, owner } = await newRun(real);
    let failing = true;
    const s: Store = {
      ...real,
      runs: {
        ...real.runs,
        heartbeat: (...args) =>
          failing ? Promise.reject(new Error("database is locked")) : real.runs.heartbeat(...args),
      },
    };
    const errors: unknown[] = [];
    const lost = vi.fn();
    const stop = startHeartbeat({
      store: s,
      runId: run.id,
      token: owner.token,
      intervalMs: 1_000,
      onLost: lost,
      onError: (error) => errors.push(error),
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(errors).toEqual([new Error("database is locked")]);
    failing = false;
    const before = (await real.runs.get(run.id))!.owner!.heartbeatAt;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(errors).toHaveLength(1);
    expect(lost).not.toHaveBeenCalled();
    expect((await real.runs.get(run.id))!.owner!.heartbeatAt).not.toBe(before);
    stop();
  });
});
