import { keyString } from "../core/keys.js";
import type { Plan } from "../core/plan.js";
import type { Key, Usage } from "../core/types.js";
import type { JournalEntry, Store } from "../store/types.js";
import type { AttemptWriter } from "./attempt-writer.js";
import type { KeyTask } from "./execute-key.js";
import { snapshotReplayOf } from "./snapshot-keys.js";

/**
 * The step journal's wiring for an execution's keys: which keys have open entries of an
 * interrupted execution to replay, else which errored attempt a key's new attempt replays (its
 * latest, on a resume or an in-run retry), each key's journal task, and what the journal replayed
 * in all.
 *
 * @example const journals = await KeyJournals.open({ store, run, plan, writer, journaled: true, resumed: true, leased: false });
 */
export class KeyJournals {
  /** Steps replayed, executions whose replay diverged, and the usage of replayed chat calls. */
  readonly counts = { replayed: 0, diverged: 0, reused: [] as Usage[] };
  readonly #options: KeyJournalsOptions;
  readonly #open: ReadonlySet<string>;
  readonly #changed: ReadonlySet<string>;

  private constructor(options: KeyJournalsOptions, open: ReadonlySet<string>) {
    this.#options = options;
    this.#open = open;
    this.#changed = new Set(options.plan.changed);
  }

  /**
   * Keys whose interrupted execution left open journal entries: one read per run, and only on a
   * resume by a single owner (a worker reads each key's as it leases it).
   */
  static async open(options: KeyJournalsOptions): Promise<KeyJournals> {
    const open = new Set<string>();
    if (options.journaled && options.resumed && !options.leased) {
      for (const key of await options.store.journal.keys(options.runId)) open.add(keyString(key));
    }
    return new KeyJournals(options, open);
  }

  /**
   * The journal of a key's attempt: `retryOf`, the number of the errored attempt it retries in
   * this invocation; absent for its first here. Undefined: the solver is not journaled.
   */
  async of(key: Key, retryOf?: number): Promise<KeyTask["journal"]> {
    const { journaled, leased, plan, writer } = this.#options;
    if (!journaled) return undefined;
    let entries: JournalEntry[] = [];
    let discardOpen = false;
    let from = retryOf;
    if (retryOf === undefined) {
      // A worker may be handed a key that a worker that died (or froze and was fenced) had begun,
      // at any time: it reads the key's open entries as it leases it (one indexed read a key).
      // A changed sample's entries are of its old content: discarded, not replayed.
      const stale = leased || this.#open.has(keyString(key));
      const changed = this.#changed.has(key.sampleId);
      if (stale && !changed) entries = await this.#list(key, "open");
      discardOpen = stale && changed;
      // An interrupted execution's open entries come after the key's latest attempt: they win.
      if (entries.length === 0 && !changed) {
        from = snapshotReplayOf(key) ?? plan.replayFrom.get(keyString(key));
      }
    }
    const reopen = from !== undefined;
    if (from !== undefined) entries = replayable(await this.#list(key, from));
    return {
      entries,
      discardOpen,
      reopen,
      write: (draft) => writer.writeStep(draft),
      onDone: (j) => {
        this.counts.replayed += j.replayed;
        this.counts.diverged += j.diverged;
        this.counts.reused.push(...j.reused);
      },
    };
  }

  #list(key: Key, attempt: number | "open"): Promise<JournalEntry[]> {
    const { store, runId } = this.#options;
    return store.journal.list(runId, { ...key, attempt });
  }
}

/**
 * What an errored attempt replays to its next: its entries in step order, but for the steps that
 * failed at its end (what the attempt may have failed on: they run again). A step that failed
 * and that the solver went past (an agent's tool error told to the model) is its trajectory.
 */
function replayable(entries: readonly JournalEntry[]): JournalEntry[] {
  const gap = entries.findIndex((e, i) => e.step !== i);
  let end = gap === -1 ? entries.length : gap;
  while (end > 0 && entries[end - 1]!.error !== null) end--;
  return entries.slice(0, end);
}

export interface KeyJournalsOptions {
  store: Pick<Store, "journal">;
  runId: string;
  plan: Pick<Plan, "changed" | "replayFrom">;
  writer: Pick<AttemptWriter, "writeStep">;
  /** Whether the solver's steps are journaled (`solver.journal !== false`). */
  journaled: boolean;
  resumed: boolean;
  /** Keys come from a worker's leases (any of them may have been begun by another worker). */
  leased: boolean;
}
