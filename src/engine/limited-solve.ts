import type { SampleBudget } from "./sample-budget.js";
import { PausableTimer, type ClockSet } from "./pausable-timer.js";

/**
 * How long a solver whose `wallMs` limit ran out may take to return its output so far (its
 * model call or step is aborted, and every later one refused): after it, the attempt ends
 * without it (scored on an empty output), so a solver that ignores its signal cannot hold it.
 */
export const LIMIT_GRACE_MS = 2_000;

/**
 * Runs `solve` under the budget's `wallMs` limit, when it has one: `solve` gets a signal that
 * fires (its reason a LimitReached) when the limit runs out, counted from `t0` (the attempt's
 * start, `performance.now()`), as well as on `signal`. The result is what `solve` returns or
 * throws; once the limit ran out, at most LIMIT_GRACE_MS later, the LimitReached. Its clock joins
 * `clocks` when given: the time they are paused (a key waiting on its provider batch) is not
 * counted.
 *
 * @example const returned = await limitedSolve(budget, signal, t0, (s) => solver(sample, ctxWith(s)));
 */
export function limitedSolve<T>(
  budget: SampleBudget,
  signal: AbortSignal,
  t0: number,
  solve: (signal: AbortSignal) => Promise<T> | T,
  clocks?: ClockSet,
): Promise<T> {
  const wallMs = budget.limits.wallMs;
  if (wallMs === undefined) return Promise.resolve().then(() => solve(signal));
  const wall = new AbortController();
  const limited = AbortSignal.any([signal, wall.signal]);
  const timer: PausableTimer = new PausableTimer(
    Math.max(0, wallMs - (performance.now() - t0)),
    () => wall.abort(budget.wallRanOut(Math.round(performance.now() - t0 - timer.pausedMs))),
  );
  clocks?.add(timer);
  const work = Promise.resolve().then(() => solve(limited));
  return new Promise<T>((resolve, reject) => {
    let grace: ReturnType<typeof setTimeout> | undefined;
    const onWall = () => {
      grace = setTimeout(() => reject(wall.signal.reason), LIMIT_GRACE_MS);
    };
    wall.signal.addEventListener("abort", onWall, { once: true });
    work.then(resolve, reject).finally(() => {
      timer.clear();
      clearTimeout(grace);
      wall.signal.removeEventListener("abort", onWall);
    });
  });
}
