import { OutcomeFold } from "../core/outcome-fold.js";
import type { Run } from "../core/types.js";
import { withAttempts } from "../evalport/outcome-pages.js";
import type { AttemptHead, Store } from "../store/types.js";

/** A sample of a run as a diff pairs it. */
export interface SampleValues {
  id: string;
  fingerprint: string;
  /** The epoch-reduced value of each of the run's scorers (its `config.scorers` order); null: none. */
  values: readonly (number | null)[];
}

/**
 * A run's snapshot samples with their reduced values, a page at a time in sample-id order (UTF-8
 * byte order, the stores' `sampleFingerprintPages`): each page's attempt heads (read from
 * `attemptHeadPages` up to the page's last sample) are folded by the report's own fold
 * (`OutcomeFold`, the run's reducer), so a value is exactly what the run's metrics average, and
 * only a page of samples and its attempts is held at a time.
 *
 * @example for await (const page of sampleValuePages(store, run)) for (const s of page) s.values;
 */
export async function* sampleValuePages(
  store: Store,
  run: Run,
  pageSize = 1_000,
): AsyncIterable<SampleValues[]> {
  const none = run.config.scorers.map(() => null);
  const pages = withAttempts(
    store.reads.sampleFingerprintPages(run.id, pageSize),
    (s) => s.sampleId,
    store.reads.attemptHeadPages(run.id, pageSize),
  );
  for await (const { samples: page, attempts: mine } of pages) {
    const fingerprints = new Map(page.map((s) => [s.sampleId, s.fingerprint]));
    const values = new Map<string, readonly (number | null)[]>();
    // A fold per page: a sample's value depends on its own attempts only, all in this page.
    const fold = new OutcomeFold<AttemptHead>({
      fingerprintOf: (id) => fingerprints.get(id),
      scorers: run.config.scorers,
      reducer: run.config.reducer,
      isNow: () => false,
      onSample: (sampleId, reduced) => values.set(sampleId, reduced),
    });
    for (const head of mine) fold.add(head);
    fold.finish();
    yield page.map((s) => ({
      id: s.sampleId,
      fingerprint: s.fingerprint,
      values: values.get(s.sampleId) ?? none,
    }));
  }
}

/** A position in a run's `sampleValuePages`: the sample at hand, read a page ahead when needed. */
export class SampleCursor {
  readonly #pages: AsyncIterator<SampleValues[]>;
  #page: SampleValues[] = [];
  #at = 0;
  #done = false;

  constructor(pages: AsyncIterable<SampleValues[]>) {
    this.#pages = pages[Symbol.asyncIterator]();
  }

  /** The sample at hand (undefined past the last), reading the next page when this one is done. */
  async current(): Promise<SampleValues | undefined> {
    while (this.#at >= this.#page.length && !this.#done) {
      const next = await this.#pages.next();
      if (next.done) this.#done = true;
      else [this.#page, this.#at] = [next.value, 0];
    }
    return this.#page[this.#at];
  }

  advance(): void {
    this.#at++;
  }
}
