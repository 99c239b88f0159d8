/**
 * First SIGINT/SIGTERM: graceful stop. Second: abort now. Returns the two signals the engine
 * takes and a function that removes the handlers.
 */
export function trapSignals(onFirst?: (signal: NodeJS.Signals) => void): {
  stop: AbortSignal;
  abort: AbortSignal;
  release: () => void;
} {
  const stop = new AbortController();
  const abort = new AbortController();
  const handler = (signal: NodeJS.Signals) => {
    if (!stop.signal.aborted) {
      stop.abort();
      onFirst?.(signal);
    } else abort.abort();
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  return {
    stop: stop.signal,
    abort: abort.signal,
    release: () => {
      process.off("SIGINT", handler);
      process.off("SIGTERM", handler);
    },
  };
}
