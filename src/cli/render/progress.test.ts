import { describe, expect, it } from "vitest";
import type { Progress } from "../../core/events.js";
import { createProgress } from "./progress.js";

/** A non-TTY stream that keeps what was written, line by line. */
function lines() {
  const written: string[] = [];
  const stream = { isTTY: false, write: (text: string) => written.push(text.trimEnd()) };
  return { stream: stream as unknown as NodeJS.WriteStream, written };
}

const at = (executed: number, elapsedMs: number, extra: Partial<Progress> = {}): Progress => ({
  total: 300,
  done: executed,
  errored: 0,
  executed,
  inflight: 4,
  spentNowUsd: 0,
  unpricedNow: 0,
  elapsedMs,
  ...extra,
});

describe("the progress line", () => {
  it("measures the rate from the first finished sample, not from the start", () => {
    const { stream, written } = lines();
    const progress = createProgress(stream, { intervalMs: 0 });
    // 7 s of start-up (eval load, store, first connection) before the first sample finished.
    progress.update(at(1, 7_000));
    progress.update(at(11, 8_000));
    progress.update(at(31, 10_000));
    expect(written[0]).toBe("1/300 · –/s · ETA ? · errors 0 · $0.00");
    // 10 samples in the second after the first: 10/s, not 11 / 8 s = 1.4/s.
    expect(written[1]).toBe("11/300 · 10.0/s · ETA 28.9s · errors 0 · $0.00");
    expect(written[2]).toBe("31/300 · 10.0/s · ETA 26.9s · errors 0 · $0.00");
  });

  it("counts a distributed run's other workers in the rate and says ETA 0 when none is left", () => {
    const { stream, written } = lines();
    const progress = createProgress(stream, { intervalMs: 0 });
    progress.update(at(1, 500, { total: 21 }));
    progress.update(at(5, 1_500, { total: 21, others: 16 }));
    expect(written[1]).toBe("21/21 · 20.0/s · ETA 0ms · errors 0 · $0.00");
  });
});
