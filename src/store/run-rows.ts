import { StetError } from "../core/errors.js";
import { runLabelsSchema, sortedLabels, type RunLabels } from "../core/labels.js";
import { runConfigSchema, runStatusSchema } from "../core/schemas.js";
import type { Run } from "../core/types.js";
import { parseColumn } from "./rows.js";

/** A run's row as both adapters select it (the same columns); mapped to a `Run` here only. */
export interface RunRow {
  id: string;
  eval_name: string;
  status: string;
  config: string;
  sample_count: number;
  created_at: string;
  updated_at: string;
  owner_host: string | null;
  owner_pid: number | null;
  owner_token: string | null;
  heartbeat_at: number | null;
  note: string | null;
  labels: string | null; // JSON object of strings; NULL for none
}

/** A run's row as a `Run`, its owner's heartbeat aged by `nowMs` (the store's clock). */
export function toRun(row: RunRow, nowMs: number): Run {
  const what = `run ${row.id}`;
  const status = runStatusSchema.safeParse(row.status);
  if (!status.success) throw new StetError("E_STORE", `corrupt status of ${what}: ${row.status}`);
  return {
    id: row.id,
    evalName: row.eval_name,
    status: status.data,
    config: parseColumn(runConfigSchema, row.config, `config of ${what}`),
    sampleCount: row.sample_count,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    owner:
      row.owner_token !== null && row.heartbeat_at !== null
        ? {
            host: row.owner_host ?? "",
            pid: row.owner_pid ?? 0,
            token: row.owner_token,
            heartbeatAt: new Date(row.heartbeat_at).toISOString(),
            // Signed: a heartbeat stamped ahead of this clock (a clock moved back) reads negative.
            heartbeatAgeMs: nowMs - row.heartbeat_at,
          }
        : null,
    note: row.note,
    labels:
      row.labels === null ? {} : parseColumn(runLabelsSchema, row.labels, `labels of ${what}`),
  };
}

/** Labels as the `labels` column holds them: JSON with sorted keys, NULL for none. */
export function labelsColumn(labels: RunLabels | undefined): string | null {
  return labels === undefined || Object.keys(labels).length === 0
    ? null
    : JSON.stringify(sortedLabels(labels));
}
