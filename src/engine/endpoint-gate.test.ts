import { describe, expect, it } from "vitest";
import { bucketSpec } from "../core/rate-limits.js";
import { EndpointGate } from "./endpoint-gate.js";

/** An endpoint with no declared limit, on a clock the test moves, its chances from `random`. */
function gate(clock: { now: number }, random?: () => number): EndpointGate {
  const take = () => Promise.resolve({ granted: { requests: 0, tokens: 0 }, retryInMs: 0 });
  return new EndpointGate(
    "openai:m@http://x/v1",
    undefined,
    take,
    () => clock.now,
    () => {},
    () => {},
    random,
  );
}

/** A gate under a declared limit of 600 per 6 s (a chunk's lease: 150 ms), taking from `take`. */
function limitedGate(take: ConstructorParameters<typeof EndpointGate>[2], now: () => number) {
  return new EndpointGate("e", bucketSpec({ rpm: 6000, windowMs: 6000 }), take, now, () => {});
}

/** An answer whose headers say `remaining` requests are left until a reset `resetS` from now. */
const answer = (remaining: number, resetS: number) => ({
  status: 200,
  headers: new Headers({
    "x-ratelimit-limit-requests": "600",
    "x-ratelimit-remaining-requests": String(remaining),
    "x-ratelimit-reset-requests": `${resetS}s`,
  }),
});

/** Whether a request may go within `ms` (the gate's wait is cut short by a timer). */
async function goesWithin(g: EndpointGate, ms: number): Promise<boolean> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  try {
    (await g.acquire(1, controller.signal)).settle({ status: 200 });
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Two requests sent, their answers read in the order given, each saying how many requests are
 * left for the next 5 s: whether a third request may go at once after.
 */
async function thirdGoesAfter(answers: [which: "older" | "newer", remaining: number][]) {
  const g = gate({ now: 1_000 });
  const sent = { older: await g.acquire(1), newer: await g.acquire(1) };
  for (const [which, remaining] of answers) sent[which].settle(answer(remaining, 5));
  return goesWithin(g, 50);
}

/**
 * A gate whose 30 requests, one after another, were answered with what is left falling by `fall`
 * each (another `fall - 1` processes spending the same budget), down to `last` left.
 */
async function sharedBy(fall: number, last: number, clock: { now: number }, random: () => number) {
  const g = gate(clock, random);
  for (let i = 29; i >= 0; i--) (await g.acquire(1)).settle(answer(last + i * fall, 1));
  return g;
}

describe("EndpointGate", () => {
  it("sends the last requests of a budget others spend too with its share's chance: alone, it sends them", async () => {
    // Three left. Alone (each answer one fewer) the process sends: they are its own. One of four
    // (each answer four fewer) it sends one with a chance of about 3/4, as each of the others:
    // before, each of the four sent three, and the window's end was refused a 429 each time.
    const never = () => 0.99;
    expect(await goesWithin(await sharedBy(1, 3, { now: 1_000 }, never), 50)).toBe(true);
    expect(await goesWithin(await sharedBy(4, 3, { now: 1_000 }, never), 50)).toBe(false);
    expect(await goesWithin(await sharedBy(4, 3, { now: 1_000 }, () => 0.5), 50)).toBe(true);
    // Of 200 such processes, about three in four send (the chance is 3 of the share learnt).
    let sent = 0;
    for (let i = 0; i < 200; i++) {
      if (await goesWithin(await sharedBy(4, 3, { now: 1_000 }, Math.random), 5)) sent++;
    }
    expect(sent).toBeGreaterThan(110);
    expect(sent).toBeLessThan(190);
  });

  it("takes what is left less its own requests in flight times the share: the others' are in flight too", async () => {
    // 22 left; it sends a, b and c; c's answer says what the fall of the three says (10 of four
    // processes, 19 alone) while a and b are still on their way.
    for (const [fall, goes] of [
      [1, true],
      [4, false],
    ] as const) {
      const g = await sharedBy(fall, 22, { now: 1_000 }, () => 0.99);
      await g.acquire(1);
      await g.acquire(1);
      (await g.acquire(1)).settle(answer(22 - 3 * fall, 1));
      // Alone: 19 - 2 left. One of four: 10 - 2 × 4 = 2 of its share of 4, so a chance of 1/2
      // (before: 10 - 2 = 8, as if the others had nothing in flight).
      expect({ fall, goes: await goesWithin(g, 50) }).toEqual({ fall, goes });
    }
  });

  it("at a reset of a budget others spend too, sends its one request with a chance of 1/share, else looks again", async () => {
    // Nothing left until a reset a second away; then a sliding window frees one request. Alone,
    // the process sends one at the reset; one of four, each sends one with a chance of 1/4 (before,
    // all four did: three 429s at each window's end).
    for (const [fall, random, goes] of [
      [1, 0.99, true],
      [4, 0.99, false],
      [4, 0.1, true],
    ] as const) {
      const clock = { now: 1_000 };
      const g = await sharedBy(fall, 0, clock, () => random);
      expect(await goesWithin(g, 50)).toBe(false);
      clock.now += 1_001;
      expect({ fall, random, goes: await goesWithin(g, 120) }).toEqual({ fall, random, goes });
    }
  });

  it("reads the budget from the newest request's answer: an older one answered later says nothing newer", async () => {
    // The newer request's answer comes first and says the window is spent; the older one's,
    // counted before the server admitted the newer, comes after it and says 50 were left.
    expect(
      await thirdGoesAfter([
        ["newer", 0],
        ["older", 50],
      ]),
    ).toBe(false);
    // In order, the newer answer's budget is the one kept.
    expect(
      await thirdGoesAfter([
        ["older", 0],
        ["newer", 50],
      ]),
    ).toBe(true);
  });

  it("lets nothing go at a reset already past while a request sent after the answer is on its way, then one", async () => {
    // The older request's answer says the window is spent and was read after its reset (a slow
    // answer); the newer request, sent since, will say what is left. Before, each such answer let
    // one request go over the window (a sliding window's reset frees one request, which the
    // newer one may take): up to a tenth of the requests were refused under load.
    const clock = { now: 1_000 };
    const g = gate(clock);
    const older = await g.acquire(1);
    const newer = await g.acquire(1);
    older.settle(answer(0, 0));
    expect(await goesWithin(g, 50)).toBe(false);
    // Its answer is the news: spent too, and nothing newer on its way, so the reset lets one go.
    newer.settle(answer(0, 0));
    expect(await goesWithin(g, 50)).toBe(true);
  });

  it("lets one request go at a reset over a second past though a newer request never answers", async () => {
    const clock = { now: 1_000 };
    const g = gate(clock);
    const older = await g.acquire(1);
    await g.acquire(1); // never answered
    older.settle(answer(0, 0));
    expect(await goesWithin(g, 50)).toBe(false);
    clock.now += 1_001;
    expect(await goesWithin(g, 50)).toBe(true);
  });

  it("a permit lapses with its chunk's lease; given back unsent, it is no request and holds no place", async () => {
    // 600 per 6 s: a chunk's lease is 150 ms from when the store was asked.
    const clock = { now: 0 };
    const take = () => Promise.resolve({ granted: { requests: 2, tokens: 1e9 }, retryInMs: 0 });
    const g = limitedGate(take, () => clock.now);
    const permit = await g.acquire(1);
    clock.now = 149;
    expect(permit.lapsed()).toBe(false);
    clock.now = 150;
    expect(permit.lapsed()).toBe(true);
    permit.withdraw();
    expect(g.active).toBe(false);
    expect(g.waits).toMatchObject({ requests: 0, throttled: 0 });
    // A new chunk, and a permit of it within its lease, which an answer settles.
    const next = await g.acquire(1);
    expect(next.lapsed()).toBe(false);
    next.settle({ status: 200 });
    expect(next.lapsed()).toBe(false);
    expect(g.waits).toMatchObject({ requests: 1, throttled: 1 });
  });

  it("a permit given back after it spent the headers' reset does not leave the gate waiting for its answer", async () => {
    // The last answer said nothing is left, with the reset past: one request goes, and its answer
    // was to say what is left. Given back unsent, it will never answer.
    const clock = { now: 0 };
    const take = () => Promise.resolve({ granted: { requests: 5, tokens: 1e9 }, retryInMs: 0 });
    const g = limitedGate(take, () => clock.now);
    (await g.acquire(1)).settle(answer(0, 0));
    const spent = await g.acquire(1);
    clock.now += 200;
    expect(spent.lapsed()).toBe(true);
    spent.withdraw();
    expect(await goesWithin(g, 50)).toBe(true);
  });

  it("a permit a late chunk let go never lapses (it would wait for another late chunk for ever)", async () => {
    const clock = { now: 0 };
    const take = () => {
      clock.now += 200;
      return Promise.resolve({ granted: { requests: 5, tokens: 1e9 }, retryInMs: 0 });
    };
    const g = limitedGate(take, () => clock.now);
    const permit = await g.acquire(1);
    clock.now += 10_000;
    expect(permit.lapsed()).toBe(false);
  });

  it("lets requests go when the store answers slower than a chunk's lease", async () => {
    // A declared limit whose lease is 150 ms (600 per 6 s), and a store whose every take takes
    // 200 ms of the gate's clock: each chunk comes lapsed. Before, no request ever went (and an
    // abort was not heard between takes); now one goes per late chunk.
    const clock = { now: 0 };
    let takes = 0;
    const take = async () => {
      takes++;
      await new Promise((resolve) => setTimeout(resolve, 1));
      clock.now += 200;
      return { granted: { requests: 5, tokens: 1e9 }, retryInMs: 0 };
    };
    const g = limitedGate(take, () => clock.now);
    for (let i = 0; i < 3; i++) expect(await goesWithin(g, 1000)).toBe(true);
    expect(takes).toBe(3);
    const stopped = new AbortController();
    stopped.abort();
    const slow = limitedGate(take, () => clock.now);
    (await slow.acquire(1)).settle({ status: 200 });
    await expect(slow.acquire(1, stopped.signal)).rejects.toThrow();
  });

  it("under a declared limit, keeps the headers' reset for a request that goes when the bucket had no chunk for the first one", async () => {
    // The last answer said nothing is left until a reset. When the reset came, the first request
    // asked the bucket for a chunk and got none; before, the reset counted as used by it all the
    // same, with nothing in flight to answer: every request then waited for ever (a run at
    // concurrency 64 hung with 64 waiting, 0 in flight, in test/rate-limits-ai-sdk.test.ts).
    let skew = 0;
    const grants = [1, 0, 1];
    const take = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return { granted: { requests: grants.shift() ?? 1, tokens: 1e9 }, retryInMs: 1 };
    };
    const g = limitedGate(take, () => performance.now() + skew);
    (await g.acquire(1)).settle(answer(0, 1));
    skew += 2000;
    expect(await goesWithin(g, 500)).toBe(true);
    expect(grants).toEqual([]);
  });
});
