import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { stringify } from "csv-stringify";
import { StetError } from "../../core/errors.js";
import { compareKeys } from "../../core/keys.js";
import { selectOutcomes } from "../../core/outcomes.js";
import type { Attempt } from "../../core/types.js";
import { openStore } from "../open-store.js";

export interface ExportFlags {
  store?: string;
  format?: string;
  output?: string;
}

/**
 * `stet export <run-id>`: one row per key's current outcome, sorted by sample id and epoch, so
 * the same stored attempts always export as the same bytes.
 */
export async function exportCommand(runId: string, flags: ExportFlags): Promise<number> {
  const format = flags.format ?? "jsonl";
  if (format !== "jsonl" && format !== "csv") {
    throw new StetError("E_USAGE", `unknown export format "${format}" (expected jsonl or csv)`);
  }
  const store = openStore(flags.store);
  try {
    const run = await store.getRun(runId);
    if (!run)
      throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`);
    const samples = await store.getSamples(runId);
    const fingerprints = new Map(samples.map((r) => [r.sample.id, r.fingerprint]));
    const outcomes = selectOutcomes(await store.listAttempts(runId), fingerprints).sort(
      compareKeys,
    );
    const out = flags.output ? createWriteStream(flags.output) : process.stdout;
    if (format === "jsonl") {
      for (const a of outcomes) {
        if (!out.write(`${JSON.stringify(exportRow(a))}\n`)) await once(out, "drain");
      }
    } else {
      const csv = stringify({ header: true, columns: CSV_COLUMNS });
      csv.pipe(out, { end: false });
      for (const a of outcomes) csv.write(csvRow(a));
      csv.end();
      await once(csv, "end");
    }
    if (flags.output) {
      out.end();
      await once(out, "finish");
    }
    return 0;
  } finally {
    await store.close();
  }
}

/** The export form of an outcome: stable field order, no store internals. */
export function exportRow(a: Attempt) {
  return {
    runId: a.runId,
    sampleId: a.sampleId,
    epoch: a.epoch,
    attempt: a.attempt,
    status: a.status,
    output: a.output,
    scores: a.scores,
    usage: a.usage,
    startedAt: a.startedAt,
    completedAt: a.completedAt,
    durationMs: a.durationMs,
    error: a.error,
    provenance: a.provenance.kind,
  };
}

const CSV_COLUMNS = [
  "runId",
  "sampleId",
  "epoch",
  "attempt",
  "status",
  "output",
  "scores",
  "usage",
  "startedAt",
  "completedAt",
  "durationMs",
  "error",
  "provenance",
];

function csvRow(a: Attempt): Record<string, string | number> {
  const row = exportRow(a);
  const json = (v: unknown) => (v === null ? "" : JSON.stringify(v));
  return {
    ...row,
    output: typeof row.output === "string" ? row.output : json(row.output),
    scores: json(row.scores),
    usage: json(row.usage),
    error: json(row.error),
  };
}
