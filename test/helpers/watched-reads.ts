import type { Store } from "../../src/store/types.js";

/** The store's reads that hold every sample or attempt of a run (or every open sample's). */
export const WHOLE_READS = ["getSamples", "listAttemptHeads", "openSampleHeads", "listAttempts"];

/**
 * The store, with the name of every `reads` method it is asked for recorded in `calls`, in
 * order (`listAttempts(sample)` for one sample's attempts), and of every `journal` one
 * (`journal.list`): how a test tells which reads a path made (the real store answers each).
 *
 * @example const watch = watchedReads(store); await resumeRun({ store: watch.store, … }); watch.calls;
 */
export function watchedReads(store: Store): { store: Store; calls: string[] } {
  const calls: string[] = [];
  const reads = new Proxy(store.reads, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        // One sample's attempts (`listAttempts(run, { sampleId })`) is not a read of the run's.
        const one = name === "listAttempts" && (args[1] as { sampleId?: string })?.sampleId;
        calls.push(one ? "listAttempts(sample)" : String(name));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const journal = new Proxy(store.journal, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(`journal.${String(name)}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: Object.assign(Object.create(store) as Store, { reads, journal }), calls };
}
