import { describe, expect, it } from "vitest";
import { drain } from "./drain.js";

/** A source of `n` items that counts how often it was asked. */
function source(n: number) {
  const items = Array.from({ length: n }, (_, i) => i);
  let asked = 0;
  return {
    next: () => {
      asked++;
      return items.shift();
    },
    asked: () => asked,
  };
}

describe("drain", () => {
  it("opens slots as items come: a pool of 100000 over 6 items holds at most 7", async () => {
    const items = source(6);
    const dispatched: number[] = [];
    let inflight = 0;
    let most = 0;
    await drain(
      items.next,
      100_000,
      () => false,
      async (item) => {
        inflight++;
        most = Math.max(most, inflight);
        dispatched.push(item);
        await new Promise((resolve) => setImmediate(resolve));
        inflight--;
      },
    );
    expect(dispatched).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(6);
    // Each slot asks once per item and once more to hear there is none: 6 items, 7 slots.
    expect(items.asked()).toBe(6 + 7);
  });

  it("fills up to the concurrency and refills a slot the moment it frees", async () => {
    const items = source(10);
    const gates: (() => void)[] = [];
    const started: number[] = [];
    const done = drain(
      items.next,
      4,
      () => false,
      (item) => {
        started.push(item);
        return new Promise<void>((resolve) => gates.push(resolve));
      },
    );
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(started).toEqual([0, 1, 2, 3]);
    gates.shift()!();
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    while (gates.length > 0) {
      gates.shift()!();
      await settle();
    }
    await done;
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("a dispatch that throws ends the pool after the items in flight, taking no more", async () => {
    const items = source(100);
    const finished: number[] = [];
    const run = drain(
      items.next,
      3,
      () => false,
      async (item) => {
        await new Promise((resolve) => setImmediate(resolve));
        if (item === 1) throw new Error("listener failed");
        await new Promise((resolve) => setImmediate(resolve));
        finished.push(item);
      },
    );
    await expect(run).rejects.toThrow("listener failed");
    expect(finished.sort()).toEqual([0, 2]);
    expect(items.asked()).toBeLessThan(10);
  });

  it("each slot gives back, undispatched, the item it took once stopped() says no", async () => {
    const items = source(5);
    const seen: [number, boolean][] = [];
    let stop = false;
    await drain(
      items.next,
      2,
      () => stop,
      async (item, go) => {
        seen.push([item, go]);
        if (item === 1) stop = true;
      },
    );
    expect(seen).toEqual([
      [0, true],
      [1, true],
      [2, false],
      [3, false],
    ]);
  });
});
