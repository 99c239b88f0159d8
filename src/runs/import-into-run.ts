import { basename } from "node:path";
import { StetError } from "../core/errors.js";
import type { Key, Run, RunStatus } from "../core/types.js";
import { acquireRun, takeoverRefusal } from "../engine/acquire.js";
import { newOwnerIdentity } from "../engine/owner.js";
import { planImport, type ImportPlan } from "../evalport/plan-import.js";
import {
  readImportFile,
  type ImportFile,
  type ImportFormat,
} from "../evalport/read-import-file.js";
import type { RunCounts, Store } from "../store/types.js";
import { requireRun } from "./require-run.js";
import { restoredStatus, settledStatus, wasCutShort } from "./run-status.js";

export interface ImportOptions {
  store: Store;
  runId: string;
  file: string;
  /** Expected sha256 of the file's bytes (hex, optionally `sha256:`-prefixed). */
  sha256?: string;
  staleMs?: number;
}

export interface ImportReport {
  runId: string;
  file: string;
  format: ImportFormat;
  /** `sha256:<hex>`: the provenance source of the inserted attempts. */
  source: string;
  /** Keys inserted by this import. */
  imported: Key[];
  /** Keys the run already had scored: left untouched. */
  alreadyScored: Key[];
  /** Keys whose record in the file is an error: not imported. */
  notCompleted: Key[];
  previousStatus: RunStatus;
  status: RunStatus;
  counts: RunCounts;
}

/**
 * Restores completed work from a ResultSet, a Results JSONL or the engine's fallback JSONL into
 * a run, all or nothing. The EvalPort layer reads, validates and plans (the sha256 when given,
 * the file's validity, every result against the run's samples, epochs and fingerprints) before
 * the store is touched. Then the run is claimed (a live owner: `E_RUN_ACTIVE`), the new completed
 * attempts are recorded in one commit with provenance `{ kind: "imported", source:
 * "sha256:<hex>" }` (their cost is reused, never spend; a fallback file's attempts are the run's
 * own, paid for once and never stored, and keep theirs), and the run is released with the status
 * `settledStatus` gives: `completed` when nothing remains, else `interrupted` (if its work was
 * cut short) or `errored`, so it stays resumable. Keys the run already scored are skipped and
 * reported; an import that adds nothing writes nothing, so importing a file twice changes nothing.
 *
 * @example
 * const report = await importResults({ store, runId: "r_abc", file: "backup.json", sha256 });
 * report.imported.length; // 42
 */
export async function importResults(options: ImportOptions): Promise<ImportReport> {
  const { store, runId } = options;
  // A wrong run id is said before a large file is read; the run is read again after it.
  await requireRun(store, runId);
  const file = await readImportFile(options.file, {
    ...(options.sha256 === undefined ? {} : { sha256: options.sha256 }),
  });
  const run = await requireRun(store, runId);
  if (file.runId !== undefined && file.runId !== runId) {
    throw new StetError(
      "E_INVALID_INPUT",
      `${file.path} holds attempts of run ${file.runId}, not of ${runId}; nothing was imported`,
    );
  }
  const active = await takeoverRefusal(store, run, options);
  if (active) throw active;
  const planned = await plan(store, run, file);
  if (planned.drafts.length === 0) {
    return report(file, run, planned, [], run.status, await store.reads.countKeys(runId));
  }
  const owner = newOwnerIdentity();
  await acquireRun(store, run, owner, options);
  let inserted: ImportPlan;
  try {
    // Owned now, the run cannot change under us: plan again against what is stored.
    inserted = await plan(store, run, file);
    if (inserted.drafts.length > 0)
      await store.attempts.record(runId, owner.token, inserted.drafts);
  } catch (error) {
    await store.runs
      .release(runId, owner.token, restoredStatus(run), run.note ?? undefined)
      .catch(() => {});
    throw error;
  }
  const counts = await store.reads.countKeys(runId);
  const status = settledStatus({ remaining: counts.remaining, cutShort: wasCutShort(run) });
  const note = `imported ${inserted.drafts.length} result(s) from ${basename(file.path)} (sha256:${file.sha256.slice(0, 12)}…)`;
  if (!(await store.runs.release(runId, owner.token, status, note))) {
    throw new StetError(
      "E_FENCED",
      `run ${runId} was taken over by another process during the import`,
    );
  }
  return report(file, run, inserted, inserted.drafts, status, counts);
}

/**
 * Plans against what the run stores of the file's samples only (their fingerprints and attempt
 * heads): a fallback file's few dozen attempts are imported into a run of a million keys without
 * reading its whole snapshot and every attempt (1-2 GB and many seconds).
 */
async function plan(store: Store, run: Run, file: ImportFile): Promise<ImportPlan> {
  const { fingerprints, heads } = await store.reads.sampleHeads(
    run.id,
    file.records.map((r) => r.attempt.sampleId),
  );
  return planImport({
    records: file.records,
    snapshot: fingerprints,
    epochs: run.config.epochs,
    stored: heads,
    source: `sha256:${file.sha256}`,
    file: file.path,
    ownAttempts: file.format === "fallback-jsonl",
  });
}

function report(
  file: ImportFile,
  run: Run,
  planned: ImportPlan,
  inserted: readonly Key[],
  status: RunStatus,
  counts: RunCounts,
): ImportReport {
  return {
    runId: run.id,
    file: file.path,
    format: file.format,
    source: `sha256:${file.sha256}`,
    imported: inserted.map(({ sampleId, epoch }) => ({ sampleId, epoch })),
    alreadyScored: planned.alreadyScored,
    notCompleted: planned.notCompleted,
    previousStatus: run.status,
    status,
    counts,
  };
}
