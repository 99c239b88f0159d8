import type { Usage } from "../core/types.js";
import { attemptMapper, toUsage, type AttemptHeadRow } from "./rows.js";
import type { ReportInputs } from "./types.js";

/** A head row of a multi-run read: the run's id, then the columns of ATTEMPT_HEAD_COLUMNS. */
export type RunHeadRow = [runId: string, ...AttemptHeadRow];

export interface UsageRow {
  run_id: string;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  usage_detail: string | null;
}

/**
 * Groups the rows of the three multi-run reads (snapshot fingerprints, attempt heads in key
 * order, scoring usage) by run: what `Store.listReportInputs` returns for either adapter.
 */
export function groupReportInputs(
  runIds: readonly string[],
  fingerprints: Iterable<{ run_id: string; sample_id: string; fingerprint: string }>,
  heads: Iterable<RunHeadRow>,
  usage: Iterable<UsageRow>,
): Map<string, ReportInputs> {
  const byRun = new Map<string, ReportInputs>(
    runIds.map((id) => [id, { fingerprints: new Map(), heads: [], scoringUsage: [] }]),
  );
  for (const row of fingerprints)
    byRun.get(row.run_id)?.fingerprints.set(row.sample_id, row.fingerprint);
  const mappers = new Map<string, ReturnType<typeof attemptMapper>>();
  for (const [runId, ...row] of heads) {
    let mapper = mappers.get(runId);
    if (!mapper) mappers.set(runId, (mapper = attemptMapper(runId)));
    byRun.get(runId)?.heads.push(mapper.head(row));
  }
  for (const row of usage) {
    const u: Usage | null = toUsage(
      row.input_tokens,
      row.output_tokens,
      row.cost_usd,
      row.usage_detail,
    );
    if (u) byRun.get(row.run_id)?.scoringUsage.push(u);
  }
  return byRun;
}
