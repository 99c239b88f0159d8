/**
 * Every signal's watchers, behind one listener per signal: a request, or an attempt, that
 * watches the run's signal adds to a set instead of adding and removing an event listener (an
 * EventTarget listener costs several times a set's entry, and the run's signal is watched by
 * every request of the run).
 */
const watchers = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `onAbort` once when `signal` aborts, unless the returned function was called first. The
 * caller checks `signal.aborted` before (an aborted signal never calls it). Watchers are called
 * in the order they began watching, as the signal's listeners are.
 *
 * @example
 * const unwatch = watchAbort(signal, () => request.destroy());
 * try { await response; } finally { unwatch(); }
 */
export function watchAbort(signal: AbortSignal, onAbort: () => void): () => void {
  let set = watchers.get(signal);
  if (set === undefined) {
    const watching = new Set<() => void>();
    signal.addEventListener(
      "abort",
      () => {
        for (const watcher of watching) watcher();
        watching.clear();
      },
      { once: true },
    );
    watchers.set(signal, watching);
    set = watching;
  }
  // A function of its own per watch, so the same callback can watch twice and leave once.
  const entry = (): void => onAbort();
  set.add(entry);
  const watching = set;
  return () => {
    watching.delete(entry);
  };
}
