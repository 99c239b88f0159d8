import { describe, expect, it } from "vitest";
import { LearnedRate } from "./learned-rate.js";

/** Sends `n` requests one ms apart from `at`, each answered at once with a success. */
function succeed(pace: LearnedRate, at: number, n: number): number {
  for (let i = 0; i < n; i++, at++) {
    expect(pace.wait(at)).toBe(0);
    pace.spend(at);
    pace.succeeded();
  }
  return at;
}

describe("LearnedRate", () => {
  it("paces nothing before the first 429", () => {
    const pace = new LearnedRate();
    succeed(pace, 0, 1000);
    expect(pace.perSecond).toBeUndefined();
  });

  it("learns one window's successes over the time to the end of the first pause, after it", () => {
    const pace = new LearnedRate();
    // 600 admitted in the first 600 ms of a 6 s window; the burst's 429s ask for a pause to 6.5 s.
    const at = succeed(pace, 0, 600);
    for (let i = 0; i < 64; i++) pace.rejected(at - 10, at + i, 6500);
    // Learnt once the pause is over: 600 over the 6 s to its end (half a second of rounding off).
    expect(pace.perSecond).toBeUndefined();
    expect(pace.wait(6500)).toBeGreaterThan(0);
    expect(pace.perSecond).toBeCloseTo(100, 5);
    // Paced: nothing saved up over the pause, then one request each 10 ms, the first at 6.51 s.
    let sent = 0;
    for (let t = 6500; t <= 7500; t++) {
      if (pace.wait(t) === 0) {
        pace.spend(t);
        sent++;
      }
    }
    // (Whole ms and floating point: the last may fall just past the second.)
    expect(sent).toBeGreaterThanOrEqual(99);
    expect(sent).toBeLessThanOrEqual(100);
  });

  it("cuts the rate by a tenth once per congestion, and raises it with successes", () => {
    const pace = new LearnedRate();
    const at = succeed(pace, 0, 600);
    pace.rejected(at, at, 6500);
    pace.wait(6500);
    const learnt = pace.perSecond!;
    // Two 429s of requests sent before the first's answer: one cut.
    pace.rejected(7000, 7010, 8010);
    pace.rejected(7005, 7011, 8011);
    expect(pace.perSecond).toBeCloseTo(learnt * 0.9, 9);
    // A request sent after that cut is refused: a new congestion.
    pace.rejected(8100, 8101, 9101);
    expect(pace.perSecond).toBeCloseTo(learnt * 0.81, 9);
    for (let i = 0; i < 1000; i++) pace.succeeded();
    expect(pace.perSecond).toBeCloseTo(learnt * 0.81 * (1 + 1 / 10_000) ** 1000, 9);
  });
});
