import type { Json } from "../core/json.js";
import {
  compareResults,
  resultKey,
  type EvalPortResult,
  type ResultSetDocument,
} from "./result-set-types.js";
import { summarizeResults } from "./summarize-results.js";
import { latestInstant } from "./timestamps.js";
import { isObject } from "./validation-types.js";

/** What a ResultSet should cover, to tell a complete one from a partial one. */
export interface Coverage {
  /** Every test case id of the run or suite; undefined when not known. */
  testCaseIds?: readonly string[];
  /** Repetitions (epochs) per test case, when known. */
  epochs?: number;
  /** Without known ids: whether some source declared itself complete. */
  declaredComplete?: boolean;
}

/** A ResultSet's fields other than its results and what is computed from them. */
export type ResultSetHeader = Omit<ResultSetDocument, "results" | "summary">;

/**
 * The ResultSet of some results: sorted by (test_case_id, attempt), `summary` recomputed, and
 * the partial-run convention applied. With known test case ids, the set is complete when
 * every id has a Result without `error` for each attempt 1..epochs (any attempt when epochs is
 * unknown); else it is complete when `declaredComplete`. A partial set gets
 * `metadata.openeval.partial = true` (nested form; a dotted `"openeval.partial"` key is
 * dropped) and `metadata.stet.covered` (the ids fully covered); known ids and epochs are
 * recorded as `metadata.stet.test_case_ids` / `epochs`, so a later merge can tell coverage. A
 * complete set's `completed_at` is the latest of the header's and the results' (absent when
 * partial). Export and merge both build their documents here, so they agree byte for byte.
 *
 * @example assembleResultSet(header, results, { testCaseIds: ["q1", "q2"], epochs: 1 })
 */
export function assembleResultSet(
  header: ResultSetHeader,
  results: readonly EvalPortResult[],
  coverage: Coverage,
): ResultSetDocument {
  const sorted = [...results].sort(compareResults);
  const ids = coverage.testCaseIds && [...new Set(coverage.testCaseIds)].sort();
  const covered = ids && coveredIds(ids, sorted, coverage.epochs);
  const complete = ids ? covered!.length === ids.length : coverage.declaredComplete === true;
  const completedAt = complete
    ? latestInstant([header.completed_at, ...sorted.map((r) => r.completed_at)])
    : undefined;
  const metadata = coverageMetadata(header.metadata, complete, ids, coverage.epochs, covered);
  return {
    ...(header.$schema !== undefined && { $schema: header.$schema }),
    version: header.version,
    suite_id: header.suite_id,
    ...(header.suite_version !== undefined && { suite_version: header.suite_version }),
    run_id: header.run_id,
    started_at: header.started_at,
    ...(completedAt !== undefined && { completed_at: completedAt }),
    ...(header.provider !== undefined && { provider: header.provider }),
    ...(header.runner !== undefined && { runner: header.runner }),
    ...(header.isolation !== undefined && { isolation: header.isolation }),
    ...(header.group !== undefined && { group: header.group }),
    results: sorted,
    summary: summarizeResults(sorted),
    ...(Object.keys(metadata).length > 0 && { metadata }),
  };
}

function coveredIds(
  ids: readonly string[],
  results: readonly EvalPortResult[],
  epochs: number | undefined,
): string[] {
  const finished = new Set(results.filter((r) => r.error === undefined).map(resultKey));
  const anyAttempt = new Set(
    results.filter((r) => r.error === undefined).map((r) => r.test_case_id),
  );
  return ids.filter((id) => {
    if (epochs === undefined) return anyAttempt.has(id);
    for (let attempt = 1; attempt <= epochs; attempt++) {
      if (!finished.has(resultKey({ test_case_id: id, attempt }))) return false;
    }
    return true;
  });
}

/** `openeval` and `stet` are read as objects (anything else there is replaced). */
function coverageMetadata(
  source: Record<string, Json> | undefined,
  complete: boolean,
  ids: string[] | undefined,
  epochs: number | undefined,
  covered: string[] | undefined,
): Record<string, Json> {
  const { "openeval.partial": _dotted, openeval, stet, ...rest } = source ?? {};
  const metadata: Record<string, Json> = rest;
  const { partial: _partial, ...otherOpeneval } = isObject(openeval) ? openeval : {};
  const nextOpeneval: Record<string, Json> = {
    ...otherOpeneval,
    ...(!complete && { partial: true }),
  };
  if (Object.keys(nextOpeneval).length > 0) metadata.openeval = nextOpeneval;
  const { covered: _covered, ...otherStet } = isObject(stet) ? stet : {};
  const nextStet: Record<string, Json> = {
    ...otherStet,
    ...(ids && { test_case_ids: ids }),
    ...(ids && epochs !== undefined && { epochs }),
    ...(!complete && covered && { covered }),
  };
  if (Object.keys(nextStet).length > 0) metadata.stet = nextStet;
  return metadata;
}
