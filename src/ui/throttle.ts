/** Work asked for often (on every progress event) and done at most at a bounded rate. */
export interface Throttled {
  /** Asks for the work: done now, or once the gap since the last time is over; never dropped. */
  request(): void;
  /** Cancels what is waiting, lets the running work end, then does it once more. */
  flush(): Promise<void>;
}

/**
 * Runs `work` on request, never two at once, and starts it again no sooner than `gap(ms the last
 * run took)` after the last run ended. A request that comes while it waits or runs is not lost:
 * one more run follows (the trailing edge), so what `work` draws catches up with the last
 * request even when no request comes after it. A failure goes to `onError`; `signal` ends it.
 *
 * @example const metrics = throttled(refresh, (took) => Math.max(2_000, 5 * took), signal, show);
 */
export function throttled(
  work: () => Promise<void>,
  gap: (tookMs: number) => number,
  signal: AbortSignal,
  onError: (error: unknown) => void,
): Throttled {
  let pending = false;
  let running: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let notBefore = 0;

  const run = (): Promise<void> => {
    timer = undefined;
    pending = false;
    const started = Date.now();
    running = work()
      .catch((error: unknown) => {
        if (!signal.aborted) onError(error);
      })
      .finally(() => {
        running = undefined;
        notBefore = Date.now() + gap(Date.now() - started);
        schedule();
      });
    return running;
  };
  const schedule = () => {
    if (!pending || running || timer !== undefined || signal.aborted) return;
    timer = setTimeout(() => void run(), Math.max(0, notBefore - Date.now()));
  };
  const cancel = () => {
    clearTimeout(timer);
    timer = undefined;
    pending = false;
  };
  signal.addEventListener("abort", cancel, { once: true });

  return {
    request: () => {
      pending = true;
      schedule();
    },
    flush: async () => {
      cancel();
      while (running) await running;
      cancel();
      await run();
    },
  };
}
