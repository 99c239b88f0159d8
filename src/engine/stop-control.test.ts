import { afterEach, describe, expect, it, vi } from "vitest";
import type { RunEvent } from "../core/events.js";
import { AttemptAborted } from "./attempt-signal.js";
import { StopControl } from "./stop-control.js";

function control(graceMs?: number) {
  const events: RunEvent[] = [];
  const stops = new StopControl({ emit: (e) => events.push(e), inflight: () => 3, graceMs });
  return { stops, events };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("StopControl", () => {
  it("keeps the first reason and its note, announces it once, and aborts only when told now", () => {
    const { stops, events } = control();
    stops.stop("budget", false, "budget: spent $1.00 of the $1.00 cap");
    stops.stop("signal", false, "interrupted by a signal");
    expect(stops.reason).toBe("budget");
    expect(stops.note).toBe("budget: spent $1.00 of the $1.00 cap");
    expect(events).toEqual([
      {
        type: "stopping",
        reason: "budget",
        inflight: 3,
        note: "budget: spent $1.00 of the $1.00 cap",
      },
    ]);
    expect(stops.signal.aborted).toBe(false);
    // A later immediate stop aborts what is in flight, though its reason does not replace the first.
    stops.stop("ownership-lost", true, "taken over by another process");
    expect(stops.reason).toBe("budget");
    expect(stops.signal.aborted).toBe(true);
    expect(stops.signal.reason).toBeInstanceOf(AttemptAborted);
  });

  it("a graceful stop aborts what is in flight once the grace period ran out, not before", () => {
    vi.useFakeTimers();
    const { stops } = control(5_000);
    stops.gracefully("cancel", "cancelled (by ann)");
    expect(stops.reason).toBe("cancel");
    vi.advanceTimersByTime(4_999);
    expect(stops.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(stops.signal.aborted).toBe(true);
  });

  it("the grace period is 10 s unless given", () => {
    vi.useFakeTimers();
    const { stops } = control();
    stops.gracefully("misconfigured", "stopped early");
    vi.advanceTimersByTime(9_999);
    expect(stops.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(stops.signal.aborted).toBe(true);
  });

  it("stops gracefully on the caller's signal, and at once on its abort signal with its note redacted", () => {
    const graceful = new AbortController();
    const { stops, events } = control();
    const unlisten = stops.listen(graceful.signal, undefined);
    graceful.abort();
    expect(stops.reason).toBe("signal");
    expect(stops.note).toBe("interrupted by a signal");
    expect(stops.signal.aborted).toBe(false);
    unlisten();
    expect(events).toHaveLength(1);

    const now = new AbortController();
    const other = control();
    other.stops.listen(undefined, now.signal, [
      { name: "OPENAI_API_KEY", value: "sk-secret-123456" },
    ]);
    now.abort("crashed: sk-secret-123456 refused");
    expect(other.stops.reason).toBe("signal");
    expect(other.stops.note).not.toContain("sk-secret-123456");
    expect(other.stops.signal.aborted).toBe(true);
  });

  it("no longer listens once unlistened", () => {
    const graceful = new AbortController();
    const { stops } = control();
    stops.listen(graceful.signal, undefined)();
    graceful.abort();
    expect(stops.reason).toBeNull();
  });

  it("aborts in flight without a reason for an unexpected error", () => {
    const { stops, events } = control();
    stops.abortInflight();
    expect(stops.signal.aborted).toBe(true);
    expect(stops.reason).toBeNull();
    expect(events).toEqual([]);
  });
});
