import { describe, expect, it } from "vitest";
import { StetError } from "../core/errors.js";
import type { Key } from "../core/types.js";
import { untilAborted } from "./attempt-signal.js";
import type { KeyEnd } from "./key-runner.js";
import type { KeySource } from "./lease-source.js";
import { StopControl } from "./stop-control.js";
import { WorkerPool, type WorkerPoolParts } from "./worker-pool.js";

const keysOf = (n: number): Key[] =>
  Array.from({ length: n }, (_, i) => ({ sampleId: `s${i + 1}`, epoch: 1 }));

/** A source that hands out its keys whatever `halted` says (as a claimed lease batch may) and notes what it is told. */
function source(keys: Key[], failOnDone?: { sampleId: string; error: Error }) {
  const queue = [...keys];
  const taken: string[] = [];
  const done: [string, KeyEnd][] = [];
  const keySource: KeySource = {
    next: () => {
      const key = queue.shift();
      if (key) taken.push(key.sampleId);
      return key;
    },
    done: async (key, end) => {
      done.push([key.sampleId, end]);
      if (failOnDone?.sampleId === key.sampleId) throw failOnDone.error;
    },
  };
  return { keySource, taken, done };
}

/**
 * A pool whose keys run until the test settles them (or the run aborts them). `started(n)`
 * resolves once n keys are running.
 */
function pool(
  keySource: KeySource,
  concurrency: number,
  extra: Partial<WorkerPoolParts<string>> = {},
) {
  const stops = new StopControl({ emit: () => {}, inflight: () => running.size });
  const running = new Map<string, (end: KeyEnd | Error) => void>();
  const waiters: [number, () => void][] = [];
  let count = 0;
  const scored: string[] = [];
  const parts: WorkerPoolParts<string> = {
    keys: keySource,
    concurrency,
    stops,
    gate: undefined,
    inflight: () => running.size,
    writeFailure: () => null,
    runKey: async (key) => {
      const end = new Promise<KeyEnd | Error>((resolve) => running.set(key.sampleId, resolve));
      count++;
      for (const [n, resolve] of waiters) if (count >= n) resolve();
      try {
        const result = await untilAborted(end, stops.signal);
        if (result instanceof Error) throw result;
        return result;
      } finally {
        running.delete(key.sampleId);
      }
    },
    score: async (unit) => {
      scored.push(unit);
    },
    ...extra,
  };
  const workers = new WorkerPool(parts);
  return {
    workers,
    stops,
    scored,
    started: (n: number) =>
      new Promise<void>((resolve) => (count >= n ? resolve() : waiters.push([n, resolve]))),
    settle: (sampleId: string, end: KeyEnd | Error) => running.get(sampleId)!(end),
  };
}

describe("WorkerPool", () => {
  it("executes every key at most `concurrency` at a time, after the units to score", async () => {
    const { keySource, taken, done } = source(keysOf(4));
    const p = pool(keySource, 2);
    const ran = p.workers.run(["u1", "u2"]);
    await p.started(2);
    expect(p.scored).toEqual(["u1", "u2"]);
    expect(taken).toEqual(["s1", "s2"]);
    p.settle("s1", "scored");
    await p.started(3);
    p.settle("s2", "errored");
    await p.started(4);
    p.settle("s3", "scored");
    p.settle("s4", "scored");
    await ran;
    expect(done).toEqual([
      ["s1", "scored"],
      ["s2", "errored"],
      ["s3", "scored"],
      ["s4", "scored"],
    ]);
    expect(p.workers.fault).toBeUndefined();
  });

  it("a graceful stop: keys not started are given back, in-flight ones finish with their end", async () => {
    const { keySource, taken, done } = source(keysOf(6));
    const p = pool(keySource, 2);
    const ran = p.workers.run([]);
    await p.started(2);
    p.stops.gracefully("signal", "interrupted by a signal");
    p.settle("s1", "scored");
    p.settle("s2", "errored");
    await ran;
    // Each slot took one key more, found the pool stopped and gave it back; the rest stay untaken.
    expect(new Map(done)).toEqual(
      new Map([
        ["s1", "scored"],
        ["s2", "errored"],
        ["s3", "abandoned"],
        ["s4", "abandoned"],
      ]),
    );
    expect(taken).toEqual(["s1", "s2", "s3", "s4"]);
    expect(p.stops.signal.aborted).toBe(false);
  });

  it("an immediate stop: in-flight keys are aborted and abandoned, nothing more is dispatched", async () => {
    const { keySource, done } = source(keysOf(5));
    const p = pool(keySource, 3);
    const ran = p.workers.run([]);
    await p.started(3);
    p.stops.stop("signal", true, "interrupted");
    await ran;
    expect(
      done
        .filter(([, end]) => end === "abandoned")
        .map(([id]) => id)
        .sort(),
    ).toEqual(expect.arrayContaining(["s1", "s2", "s3"]));
    expect(done.every(([, end]) => end === "abandoned")).toBe(true);
    expect(p.workers.fault).toBeUndefined();
  });

  it("an unexpected error is the pool's fault: what is in flight is aborted, nothing more dispatched", async () => {
    const { keySource, taken } = source(keysOf(5));
    const p = pool(keySource, 2);
    const ran = p.workers.run([]);
    await p.started(2);
    const bug = new TypeError("a listener threw");
    p.settle("s1", bug);
    await ran;
    expect(p.workers.fault).toEqual({ error: bug });
    expect(p.stops.signal.aborted).toBe(true);
    expect(p.stops.reason).toBeNull();
    expect(taken.slice(0, 2)).toEqual(["s1", "s2"]);
    expect(taken).not.toContain("s5");
  });

  it("a writer that gave up stops the pool (store unwritable, or fenced out) and its keys are abandoned", async () => {
    const { keySource, done } = source(keysOf(3));
    let failure: StetError | null = null;
    const p = pool(keySource, 1, { writeFailure: () => failure });
    const ran = p.workers.run([]);
    await p.started(1);
    failure = new StetError("E_STORE_UNWRITABLE", "the store stayed unwritable: disk full");
    p.settle("s1", failure);
    await ran;
    expect(p.stops.reason).toBe("store-unwritable");
    expect(p.stops.note).toBe("the store stayed unwritable: disk full");
    expect(done[0]).toEqual(["s1", "abandoned"]);
    expect(p.workers.fault).toBeUndefined();
  });

  it("a lease taken from this worker (E_FENCED on done) stops it at once as ownership lost", async () => {
    const fenced = new StetError("E_FENCED", "lease of s1 is another worker's");
    const { keySource, done } = source(keysOf(3), { sampleId: "s1", error: fenced });
    const p = pool(keySource, 2);
    const ran = p.workers.run([]);
    await p.started(2);
    p.settle("s1", "errored");
    await ran;
    expect(p.stops.reason).toBe("ownership-lost");
    expect(p.stops.signal.aborted).toBe(true);
    // s2 was aborted; s3, taken as the pool stopped, was given back.
    expect(new Map(done)).toEqual(
      new Map([
        ["s1", "errored"],
        ["s2", "abandoned"],
        ["s3", "abandoned"],
      ]),
    );
  });

  it("a source that cannot give a key stops the pool as a store failure, kept as the claim failure", async () => {
    const broken: KeySource = {
      next: () => Promise.reject(new Error("connection reset")),
      done: async () => {},
    };
    const p = pool(broken, 4);
    await p.workers.run([]);
    expect(p.stops.reason).toBe("store-unwritable");
    expect(p.workers.claimFailure).toMatchObject({ code: "E_STORE", message: "connection reset" });
  });
});
