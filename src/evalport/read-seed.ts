import type { PagedSamples } from "../core/eval.js";
import type { AttemptDraft, Key, SampleRecord } from "../core/types.js";
import { planImport } from "./plan-import.js";
import { readImportFile, type ImportFile, type ImportRecord } from "./read-import-file.js";

export interface Seed {
  file: ImportFile;
  /** The completed results, as attempts for `runEval({ seed })`. */
  drafts: AttemptDraft[];
  /** Keys whose record in the file is an error: they execute like any other. */
  notCompleted: Key[];
}

/**
 * The completed results of a (partial) ResultSet or Results JSONL as the seed of a new run
 * (`stet run <eval> --resume-from partial.json`): checked against the eval's samples and epochs
 * exactly as an import is, before the run exists, so a bad file refuses without creating one.
 * The seeded attempts carry provenance `imported` with the file's sha256. A dataset read a page at
 * a time (`pages`, a large file) is read through once for the samples the file names: the seed is
 * held, the dataset is not.
 *
 * @example
 * const seed = await readSeed("partial.json", resolved);
 * await runEval({ store, eval: resolved, seed: seed.drafts });
 */
export async function readSeed(
  path: string,
  ev: { samples: readonly SampleRecord[]; epochs: number; pages?: PagedSamples | undefined },
  options: { sha256?: string } = {},
): Promise<Seed> {
  const file = await readImportFile(path, options);
  const plan = planImport({
    records: file.records,
    snapshot: ev.pages
      ? await namedSamples(ev.pages, file.records)
      : ev.samples.map((r) => ({ sampleId: r.sample.id, fingerprint: r.fingerprint })),
    epochs: ev.epochs,
    stored: [],
    source: `sha256:${file.sha256}`,
    file: file.path,
  });
  return { file, drafts: plan.drafts, notCompleted: plan.notCompleted };
}

/**
 * The ids and fingerprints of the dataset's samples that `records` name (all `planImport` needs
 * of the snapshot), the dataset read a page at a time.
 */
async function namedSamples(
  pages: PagedSamples,
  records: readonly ImportRecord[],
): Promise<{ sampleId: string; fingerprint: string }[]> {
  const named = new Set(records.map((r) => r.attempt.sampleId));
  const found: { sampleId: string; fingerprint: string }[] = [];
  for await (const page of pages.read()) {
    for (const { sample, fingerprint } of page) {
      if (named.has(sample.id)) found.push({ sampleId: sample.id, fingerprint });
    }
  }
  return found;
}
