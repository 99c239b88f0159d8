import type { Json } from "../core/json.js";

/**
 * The EvalPort ResultSet as TypeScript types (snake_case, as on the wire), following
 * `schemas/resultset.json`. Values of these types come from stet's own mapping or from a
 * document that passed `validateDocument(…, "resultset")`.
 */

/** The EvalPort specification version stet writes. */
export const EVALPORT_VERSION = "1.0.0-rc.5";

export type EvalPortErrorType = "timeout" | "provider_error" | "runner_error";

export interface EvalPortError {
  type?: EvalPortErrorType;
  message?: string;
  code?: string | number;
  retryable?: boolean;
}

export interface GraderResult {
  grader_id: string;
  type: string;
  /** In [0, 1]; null when the grader did not score (skipped, errored, not executed). */
  score: number | null;
  passed: boolean;
  reason?: string;
  metadata?: Record<string, Json>;
}

export interface EvalPortResult {
  test_case_id: string;
  /** 1-based repetition (stet: the epoch); absent means a single attempt. */
  attempt?: number;
  actual_output?: string;
  passed: boolean;
  grader_results: GraderResult[];
  verdict?: "passed" | "failed" | "unverified";
  duration_ms?: number;
  completed_at?: string;
  error?: EvalPortError;
  metadata?: Record<string, Json>;
}

export interface GraderSummary {
  passed?: number;
  failed?: number;
  avg_score?: number;
}

export interface ResultSetSummary {
  total?: number;
  passed?: number;
  failed?: number;
  skipped?: number;
  pass_rate?: number;
  avg_score?: number;
  duration_ms?: number;
  by_grader?: Record<string, GraderSummary>;
}

export interface ResultSetProvider {
  model?: string;
  api_base?: string;
  temperature?: number;
  max_tokens?: number;
  extra?: Record<string, Json>;
}

export interface ResultSetDocument {
  $schema?: string;
  version: string;
  suite_id: string;
  suite_version?: string;
  run_id: string;
  started_at: string;
  completed_at?: string;
  provider?: ResultSetProvider;
  runner?: { name?: string; version?: string };
  isolation?: string;
  group?: {
    group_id: string;
    parent_group_id?: string;
    role?: string;
    label?: string;
    sequence?: number;
  };
  results: EvalPortResult[];
  summary?: ResultSetSummary;
  metadata?: Record<string, Json>;
}

/** The join key of a Result within a run: `(test_case_id, attempt)`, absent attempt = 1. */
export function resultKey(result: Pick<EvalPortResult, "test_case_id" | "attempt">): string {
  return `${result.test_case_id}\u0000${result.attempt ?? 1}`;
}

/** Binary order of test case ids, then attempt (absent = 1): the order stet writes results in. */
export function compareResults(a: EvalPortResult, b: EvalPortResult): number {
  if (a.test_case_id !== b.test_case_id) return a.test_case_id < b.test_case_id ? -1 : 1;
  return (a.attempt ?? 1) - (b.attempt ?? 1);
}
