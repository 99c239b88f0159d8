import { keyString } from "../core/keys.js";
import type { Plan } from "../core/plan.js";
import type { Key, Usage } from "../core/types.js";
import type { Store } from "../store/types.js";
import type { AttemptWriter } from "./attempt-writer.js";
import type { KeyTask } from "./execute-key.js";

/**
 * The step journal's wiring for an execution's keys: which keys have open entries of an
 * interrupted execution to replay, each key's journal task, and what the journal replayed in all.
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

  /** The journal of a key's attempt (`first`: its first in this invocation); undefined: none. */
  async of(key: Key, first: boolean): Promise<KeyTask["journal"]> {
    const { journaled, leased, store, runId, writer } = this.#options;
    if (!journaled) return undefined;
    // A worker may be handed a key that a worker that died (or froze and was fenced) had begun,
    // at any time: it reads the key's open entries as it leases it (one indexed read a key).
    // A changed sample's entries are of its old content: discarded, not replayed.
    const stale = first && (leased || this.#open.has(keyString(key)));
    const replay = stale && !this.#changed.has(key.sampleId);
    const entries = replay ? await store.journal.list(runId, { ...key, attempt: "open" }) : [];
    return {
      entries,
      discardOpen: stale && !replay,
      write: (draft) => writer.writeStep(draft),
      onDone: (j) => {
        this.counts.replayed += j.replayed;
        this.counts.diverged += j.diverged;
        this.counts.reused.push(...j.reused);
      },
    };
  }
}

export interface KeyJournalsOptions {
  store: Pick<Store, "journal">;
  runId: string;
  plan: Pick<Plan, "changed">;
  writer: Pick<AttemptWriter, "writeStep">;
  /** Whether the solver's steps are journaled (`solver.journal !== false`). */
  journaled: boolean;
  resumed: boolean;
  /** Keys come from a worker's leases (any of them may have been begun by another worker). */
  leased: boolean;
}
