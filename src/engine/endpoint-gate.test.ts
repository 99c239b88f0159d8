import { describe, expect, it } from "vitest";
import { EndpointGate } from "./endpoint-gate.js";

/** An endpoint with no declared limit, on a clock the test moves. */
function gate(clock: { now: number }): EndpointGate {
  const take = () => Promise.resolve({ granted: { requests: 0, tokens: 0 }, retryInMs: 0 });
  return new EndpointGate(
    "openai:m@http://x/v1",
    undefined,
    take,
    () => clock.now,
    () => {},
  );
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
    (await g.acquire(1, controller.signal))({ status: 200 });
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

describe("EndpointGate", () => {
  it("reads the budget from the newest request's answer: an older one answered later says nothing newer", async () => {
    const clock = { now: 1_000 };
    const g = gate(clock);
    const first = await g.acquire(1);
    const second = await g.acquire(1);
    // The later request's answer comes first and says the window is spent for 5 s; the earlier
    // one's, counted before the server admitted the later, comes after it and says 50 were left.
    second(answer(0, 5));
    first(answer(50, 5));
    expect(await goesWithin(g, 50)).toBe(false);
    // In order, the newer answer's budget is the one kept.
    const g2 = gate(clock);
    const a = await g2.acquire(1);
    const b = await g2.acquire(1);
    a(answer(0, 5));
    b(answer(50, 5));
    expect(await goesWithin(g2, 50)).toBe(true);
  });
});
