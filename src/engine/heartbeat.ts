import type { Store } from "../store/types.js";

export interface HeartbeatOptions {
  store: Store;
  runId: string;
  token: string;
  intervalMs: number;
  /** Called once when the store says the token no longer owns the run. */
  onLost: () => void;
  /** Called once when a beat finds a cancel request (`stet cancel`, from anywhere). */
  onCancel?: (request: string) => void;
  /** Called when a beat fails for another reason (the next beat tries again). */
  onError?: (error: unknown) => void;
}

/**
 * Refreshes the owner's heartbeat until stopped, and passes on a cancel request the first time a
 * beat reads one. The timer is unref'd: a heartbeat alone never keeps the process alive.
 *
 * @example const stop = startHeartbeat({ store, runId, token, intervalMs: 2000, onLost }); stop();
 */
export function startHeartbeat(options: HeartbeatOptions): () => void {
  let stopped = false;
  let beating = false;
  let cancelSeen = false;
  const beat = async () => {
    if (beating || stopped) return;
    beating = true;
    try {
      const reply = await options.store.runs.heartbeat(options.runId, options.token);
      if (stopped) return;
      if (!reply.owned) {
        stopped = true;
        clearInterval(timer);
        options.onLost();
      } else if (reply.cancelRequested !== null && !cancelSeen) {
        cancelSeen = true;
        options.onCancel?.(reply.cancelRequested);
      }
    } catch (error) {
      options.onError?.(error);
    } finally {
      beating = false;
    }
  };
  const timer = setInterval(() => void beat(), options.intervalMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
