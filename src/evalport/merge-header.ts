import { StetError } from "../core/errors.js";
import type { ResultSetHeader } from "./assemble-result-set.js";
import { joinJson } from "./join-json.js";
import {
  EVALPORT_VERSION,
  type EvalPortResult,
  type ResultSetDocument,
} from "./result-set-types.js";
import { earliestInstant, latestInstant } from "./timestamps.js";
import { isObject } from "./validation-types.js";

/**
 * The header of a merged ResultSet, the same whatever the order of its inputs: the common
 * `suite_id` (inputs naming different suites are refused, and so is a `suiteId` that differs),
 * the earliest `started_at`, the latest `completed_at`, the highest `version`, and the other
 * optional fields and `metadata` combined with `joinJson`. Without any ResultSet input (only
 * JSONL lines) `suite_id` is `suiteId` and `started_at` the earliest the lines record.
 *
 * @example mergeHeader("r_1", [{ name: "a.json", doc: a }], [], undefined).suite_id // a.suite_id
 */
export function mergeHeader(
  runId: string,
  sets: ReadonlyArray<{ name: string; doc: ResultSetDocument }>,
  lines: readonly EvalPortResult[],
  suiteId: string | undefined,
): ResultSetHeader {
  const suiteIds = [...new Set(sets.map((s) => s.doc.suite_id))];
  if (suiteId !== undefined && !suiteIds.includes(suiteId)) suiteIds.push(suiteId);
  if (suiteIds.length > 1) {
    const named = sets.map((s) => `${s.name} (suite ${s.doc.suite_id})`);
    if (suiteId !== undefined) named.push(`--suite (suite ${suiteId})`);
    throw new StetError(
      "E_INVALID_INPUT",
      `cannot merge results of different suites: ${named.join(", ")}`,
    );
  }
  const startedAt =
    earliestInstant(sets.map((s) => s.doc.started_at)) ?? earliestInstant(lines.map(lineStart));
  if (suiteIds[0] === undefined || startedAt === undefined) {
    throw new StetError(
      "E_INVALID_INPUT",
      "JSONL lines alone do not say which suite they ran and when: give a ResultSet (.json) or --suite",
    );
  }
  const optional = sets.reduce<unknown>((acc, { doc }) => joinJson(acc, optionalFields(doc)), {});
  const completedAt = latestInstant(sets.map((s) => s.doc.completed_at));
  return {
    // The joined fields come from validated documents of the same schema, so they keep its
    // shapes; the merged document is validated again before it is returned.
    ...(optional as Partial<ResultSetHeader>),
    version: highestVersion(sets.map((s) => s.doc.version)) ?? EVALPORT_VERSION,
    suite_id: suiteIds[0],
    run_id: runId,
    started_at: startedAt,
    ...(completedAt !== undefined && { completed_at: completedAt }),
  };
}

function optionalFields(doc: ResultSetDocument): Partial<ResultSetHeader> {
  const { $schema, suite_version, provider, runner, isolation, group, metadata } = doc;
  return { $schema, suite_version, provider, runner, isolation, group, metadata };
}

function lineStart(result: EvalPortResult): string | undefined {
  const stet = result.metadata?.stet;
  const started = isObject(stet) ? stet.started_at : undefined;
  return typeof started === "string" ? started : result.completed_at;
}

/** The highest semver (prerelease below its release); ties broken by text, for determinism. */
function highestVersion(versions: readonly string[]): string | undefined {
  return [...versions].sort(compareVersions).at(-1);
}

function compareVersions(a: string, b: string): number {
  const pa = /^(\d+)\.(\d+)\.(\d+)(?:-([^+]*))?/.exec(a);
  const pb = /^(\d+)\.(\d+)\.(\d+)(?:-([^+]*))?/.exec(b);
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa?.[i] ?? 0) - Number(pb?.[i] ?? 0);
    if (d !== 0) return d;
  }
  const [preA, preB] = [pa?.[4], pb?.[4]];
  if (preA !== preB) {
    if (preA === undefined) return 1;
    if (preB === undefined) return -1;
    return comparePrerelease(preA, preB);
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

function comparePrerelease(a: string, b: string): number {
  const xs = a.split(".");
  const ys = b.split(".");
  for (let i = 0; i < Math.max(xs.length, ys.length); i++) {
    const [x, y] = [xs[i], ys[i]];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (x === y) continue;
    const [nx, ny] = [/^\d+$/.test(x), /^\d+$/.test(y)];
    if (nx && ny) return Number(x) - Number(y);
    if (nx !== ny) return nx ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return 0;
}
