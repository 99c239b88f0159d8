import { StetError } from "../core/errors.js";
import { canonicalJson } from "../core/json.js";
import { assembleResultSet, type Coverage, type ResultSetHeader } from "./assemble-result-set.js";
import { formatValidationError } from "./format-validation-error.js";
import { isPartial } from "./is-partial.js";
import { mergeHeader } from "./merge-header.js";
import { resultKey, type EvalPortResult, type ResultSetDocument } from "./result-set-types.js";
import { compareInstants, latestInstant } from "./timestamps.js";
import { validateDocument } from "./validate-document.js";
import { isObject } from "./validation-types.js";

/** One merge input: a ResultSet, or the Results of a JSONL file (one per line). */
export interface MergeInput {
  name: string;
  doc: ResultSetDocument | EvalPortResult[];
}

export interface MergeOptions {
  /** The input (by name) whose result wins a collision the timestamps cannot decide. */
  prefer?: string;
  /** Every test case id of the suite: the merged set is complete once it covers them. */
  suiteIds?: readonly string[];
  /** `suite_id` when no input is a ResultSet (only JSONL lines). */
  suiteId?: string;
}

/** A key two inputs disagree on, and why the merge cannot pick a winner. */
export interface MergeConflict {
  test_case_id: string;
  attempt: number;
  reason: "missing_completed_at" | "equal_completed_at";
  /** The inputs holding the competing results. */
  sources: string[];
}

/**
 * Merges ResultSets (or Results JSONL) of one run (the EvalPort spec's "Resumable Runs & Partial
 * ResultSets"). Pure. Every input must name the same `run_id` (a JSONL line's is
 * `metadata.stet.run_id`), else the merge is refused naming each input's run. Results are
 * united by key (test_case_id, attempt — absent = 1); identical results (canonical JSON) are
 * one; of different results for a key the one with the later `completed_at` wins. When any of
 * them lacks `completed_at`, or the latest instant is shared by different results, the key is
 * a conflict: the `prefer`red input's result wins it if it has one, else the merge is refused
 * listing every conflicting key. The output is sorted by key and its summary, partial flag and
 * coverage recomputed (`assembleResultSet`): it is complete once it covers the suite's ids
 * (`suiteIds` and the inputs' own `metadata.stet.test_case_ids`), or, with no ids known, when
 * some input declares itself complete. Header fields the inputs disagree on are combined
 * order-independently (`mergeHeader`). So the merge is commutative, associative (where it
 * succeeds) and idempotent. Refusals are StetError `E_INVALID_INPUT` with `details`.
 *
 * @example
 * const merged = mergeResultSets([{ name: "a.json", doc: a }, { name: "b.json", doc: b }]);
 */
export function mergeResultSets(
  inputs: readonly MergeInput[],
  options: MergeOptions = {},
): ResultSetDocument {
  const runId = commonRunId(inputs);
  const sets = inputs.flatMap((i) => (Array.isArray(i.doc) ? [] : [{ ...i, doc: i.doc }]));
  const lines = inputs.flatMap((i) => (Array.isArray(i.doc) ? i.doc : []));
  const header: ResultSetHeader = mergeHeader(runId, sets, lines, options.suiteId);
  const results = pickWinners(inputs, options.prefer);
  if (options.suiteIds) assertInSuite(results, options.suiteIds);
  const merged = assembleResultSet(header, results, coverage(sets, options.suiteIds));
  const { valid, errors } = validateDocument(merged, "resultset");
  if (!valid) {
    throw new StetError(
      "E_INVALID_INPUT",
      `the merged ResultSet would not be valid:\n${errors.map((e) => `  ${formatValidationError(e)}`).join("\n")}`,
      { details: { errors } },
    );
  }
  return merged;
}

function commonRunId(inputs: readonly MergeInput[]): string {
  const found = inputs.map((input) => ({ name: input.name, ids: runIdsOf(input.doc) }));
  const mixed = found.find((f) => f.ids.length > 1);
  if (mixed) {
    throw new StetError(
      "E_INVALID_INPUT",
      `${mixed.name} mixes results of runs ${mixed.ids.join(", ")}; merge needs one run`,
      { details: { runIds: found } },
    );
  }
  const ids = [...new Set(found.flatMap((f) => f.ids))];
  if (ids.length > 1) {
    const named = found.filter((f) => f.ids.length > 0).map((f) => `${f.name} (run ${f.ids[0]})`);
    throw new StetError(
      "E_INVALID_INPUT",
      `cannot merge results of different runs: ${named.join(", ")}`,
      { details: { runIds: found } },
    );
  }
  if (ids.length === 0) {
    throw new StetError(
      "E_INVALID_INPUT",
      "cannot tell which run the inputs belong to: give at least one ResultSet (.json)",
    );
  }
  return ids[0]!;
}

function runIdsOf(doc: ResultSetDocument | EvalPortResult[]): string[] {
  if (!Array.isArray(doc)) return [doc.run_id];
  const ids = doc.flatMap((r) => {
    const stet = r.metadata?.stet;
    return isObject(stet) && typeof stet.run_id === "string" ? [stet.run_id] : [];
  });
  return [...new Set(ids)].sort();
}

interface Candidate {
  result: EvalPortResult;
  canonical: string;
  sources: Set<string>;
}

function pickWinners(inputs: readonly MergeInput[], prefer: string | undefined): EvalPortResult[] {
  const byKey = new Map<string, Candidate[]>();
  for (const input of inputs) {
    for (const result of Array.isArray(input.doc) ? input.doc : input.doc.results) {
      const key = resultKey(result);
      const canonical = canonicalJson(result);
      const candidates = byKey.get(key) ?? [];
      const same = candidates.find((c) => c.canonical === canonical);
      if (same) same.sources.add(input.name);
      else candidates.push({ result, canonical, sources: new Set([input.name]) });
      byKey.set(key, candidates);
    }
  }
  const winners: EvalPortResult[] = [];
  const conflicts: MergeConflict[] = [];
  for (const candidates of byKey.values()) {
    const outcome = decide(candidates, prefer);
    if ("winner" in outcome) winners.push(outcome.winner);
    else conflicts.push(outcome.conflict);
  }
  if (conflicts.length > 0) throw conflictError(conflicts, prefer);
  return winners;
}

function decide(
  candidates: Candidate[],
  prefer: string | undefined,
): { winner: EvalPortResult } | { conflict: MergeConflict } {
  if (candidates.length === 1) return { winner: candidates[0]!.result };
  const missing = candidates.some((c) => c.result.completed_at === undefined);
  let contenders = candidates;
  if (!missing) {
    const latest = latestInstant(candidates.map((c) => c.result.completed_at))!;
    contenders = candidates.filter((c) => compareInstants(c.result.completed_at!, latest) === 0);
    if (contenders.length === 1) return { winner: contenders[0]!.result };
  }
  const preferred = contenders.filter((c) => prefer !== undefined && c.sources.has(prefer));
  if (preferred.length === 1) return { winner: preferred[0]!.result };
  const first = candidates[0]!.result;
  return {
    conflict: {
      test_case_id: first.test_case_id,
      attempt: first.attempt ?? 1,
      reason: missing ? "missing_completed_at" : "equal_completed_at",
      sources: [...new Set(contenders.flatMap((c) => [...c.sources]))].sort(),
    },
  };
}

function conflictError(conflicts: MergeConflict[], prefer: string | undefined): StetError {
  conflicts.sort((a, b) =>
    a.test_case_id !== b.test_case_id
      ? a.test_case_id < b.test_case_id
        ? -1
        : 1
      : a.attempt - b.attempt,
  );
  const lines = conflicts.map((c) => {
    const why =
      c.reason === "missing_completed_at"
        ? "differ and not every one has completed_at"
        : "differ with the same completed_at";
    return `  ${c.test_case_id} (attempt ${c.attempt}): the results in ${c.sources.join(", ")} ${why}`;
  });
  const hint = prefer
    ? `${prefer} has no result for these keys, so --prefer cannot decide them`
    : "pass --prefer <file> to say whose result wins";
  return new StetError(
    "E_INVALID_INPUT",
    `merge refused: ${conflicts.length} conflicting key(s) (${hint}):\n${lines.join("\n")}`,
    { details: { conflicts } },
  );
}

function assertInSuite(results: readonly EvalPortResult[], suiteIds: readonly string[]): void {
  const known = new Set(suiteIds);
  const unknown = [...new Set(results.map((r) => r.test_case_id).filter((id) => !known.has(id)))];
  if (unknown.length === 0) return;
  const shown = unknown.slice(0, 10).join(", ");
  throw new StetError(
    "E_INVALID_INPUT",
    `${unknown.length} test case id(s) are not in the suite: ${shown}${unknown.length > 10 ? ", …" : ""}`,
    { details: { unknown } },
  );
}

function coverage(
  sets: ReadonlyArray<{ doc: ResultSetDocument }>,
  suiteIds: readonly string[] | undefined,
): Coverage {
  const declared = sets.flatMap(({ doc }) => {
    const ids = isObject(doc.metadata?.stet) ? doc.metadata.stet.test_case_ids : undefined;
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : [];
  });
  const epochs = sets.flatMap(({ doc }) => {
    const e = isObject(doc.metadata?.stet) ? doc.metadata.stet.epochs : undefined;
    return typeof e === "number" && Number.isInteger(e) && e > 0 ? [e] : [];
  });
  const known = suiteIds !== undefined || declared.length > 0;
  return {
    ...(known && { testCaseIds: [...(suiteIds ?? []), ...declared] }),
    ...(epochs.length > 0 && { epochs: Math.max(...epochs) }),
    declaredComplete: sets.some(({ doc }) => !isPartial(doc)),
  };
}
