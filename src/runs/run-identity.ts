import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Scorer, SolverFn } from "../core/eval.js";
import { StetError } from "../core/errors.js";
import { canonicalJson, type Json } from "../core/json.js";
import { createSecretRedactor, redactConfig, type Secret } from "../core/secrets.js";
import type {
  IdentityDifference,
  RunConfig,
  RunHistoryEntry,
  RunIdentity,
  ScorerIdentity,
} from "../core/types.js";

/** What an identity is computed from: an eval as it is now (name and epochs as it declares them). */
export interface IdentitySource {
  name: string;
  solver: SolverFn;
  scorers: readonly Scorer[];
  epochs: number;
}

/**
 * What defines a run of `ev`: its name, the solver's resolved description (`describe()`, else the
 * sha256 of the function's source), each scorer's name and configuration (`describe()`, else the
 * sha256 of its `score` source), the epochs the eval declares, and the sha256 of the eval file's
 * bytes. Credential-like keys and every secret in `secrets` are replaced, as in the run's config.
 *
 * @example const identity = evalIdentity(resolved, "/work/evals/qa.ts");
 */
export function evalIdentity(
  ev: IdentitySource,
  evalPath?: string,
  secrets: readonly Secret[] = [],
): RunIdentity {
  const identity: RunIdentity = {
    evalName: ev.name,
    solver: solverIdentity(ev.solver),
    scorers: ev.scorers.map(scorerIdentity),
    epochs: ev.epochs,
  };
  const fileHash = evalPath === undefined ? undefined : fileSha256(evalPath);
  if (fileHash !== undefined) identity.evalFileSha256 = fileHash;
  const all = [
    ...secrets,
    ...(ev.solver.secrets?.() ?? []),
    ...ev.scorers.flatMap((s) => s.secrets?.() ?? []),
  ];
  return createSecretRedactor(all).json(redactConfig(identity) as unknown as Json)
    .value as unknown as RunIdentity;
}

/**
 * The kind of a difference, what a resume does about it: `eval` (name, solver) and `scorers` are
 * refused; `recorded` (the eval file's bytes, the epochs the eval declares, which a resume does not
 * use: the run's recorded epochs apply) is accepted and recorded in the run's history.
 */
export type DifferenceKind = "eval" | "scorers" | "recorded";

/** The fields of two identities that differ, as `IdentityDifference`s with their kind. */
export interface IdentityComparison {
  differences: (IdentityDifference & { kind: DifferenceKind })[];
  /** The eval's name or its solver differ: results would mix two evals. */
  evalChanged: boolean;
  /** Only the scorers differ (besides `recorded` kinds): `stet rescore` is the way. */
  scorersChanged: boolean;
  /** Only `recorded` kinds differ (the file's bytes, declared epochs): name, solver, scorers match. */
  acceptable: boolean;
}

/**
 * Compares a run's recorded identity with the one of the eval given now, field by field (the
 * solver's description key by key).
 *
 * @example compareIdentity(run.config.identity, evalIdentity(ev, path)).differences
 * // [{ field: "solver.model", recorded: "gpt-4o-mini", current: "gpt-4o", kind: "eval" }]
 */
export function compareIdentity(recorded: RunIdentity, current: RunIdentity): IdentityComparison {
  const differences: IdentityComparison["differences"] = [];
  const add = (kind: DifferenceKind, field: string, a: Json | undefined, b: Json | undefined) => {
    if (canonicalJson(a ?? null) !== canonicalJson(b ?? null)) {
      differences.push({ kind, field, recorded: a ?? null, current: b ?? null });
    }
  };
  add("eval", "evalName", recorded.evalName, current.evalName);
  const solverKeys = new Set([...Object.keys(recorded.solver), ...Object.keys(current.solver)]);
  for (const key of [...solverKeys].sort()) {
    add("eval", `solver.${key}`, recorded.solver[key], current.solver[key]);
  }
  add("recorded", "epochs", recorded.epochs, current.epochs);
  const byName = (list: readonly ScorerIdentity[]) => new Map(list.map((s) => [s.name, s.config]));
  const was = byName(recorded.scorers);
  const now = byName(current.scorers);
  for (const name of [...new Set([...was.keys(), ...now.keys()])]) {
    add("scorers", `scorers.${name}`, was.get(name), now.get(name));
  }
  const order = (list: readonly ScorerIdentity[]) => list.map((s) => s.name);
  if (differences.every((d) => d.kind !== "scorers")) {
    add("scorers", "scorers (order)", order(recorded.scorers), order(current.scorers));
  }
  // A side without a file (an eval given as a value) cannot tell: only two hashes compare.
  if (recorded.evalFileSha256 !== undefined && current.evalFileSha256 !== undefined) {
    add("recorded", "evalFileSha256", recorded.evalFileSha256, current.evalFileSha256);
  }
  const evalChanged = differences.some((d) => d.kind === "eval");
  const scorersChanged = !evalChanged && differences.some((d) => d.kind === "scorers");
  return {
    differences,
    evalChanged,
    scorersChanged,
    acceptable: differences.every((d) => d.kind === "recorded"),
  };
}

/**
 * `E_EVAL_CHANGED`: the eval given to a resume is not the run's. Lists every difference; a change
 * of scorers only points to `stet rescore`.
 */
export function evalChangedError(runId: string, comparison: IdentityComparison): StetError {
  const lines = comparison.differences
    .filter((d) => d.kind !== "recorded")
    .map((d) => `  ${d.field}: ${show(d.recorded)} → ${show(d.current)}`);
  const hint = comparison.scorersChanged
    ? `Its scorers changed: score the stored outputs again with stet rescore ${runId}, ` +
      "or pass --allow-eval-change to go on with the new scorers."
    : "Start a new run for the changed eval, or pass --allow-eval-change to go on with it anyway " +
      "(the change is recorded in the run's history).";
  const what = comparison.scorersChanged
    ? "other scorers than the ones"
    : "another eval than the one";
  return new StetError(
    "E_EVAL_CHANGED",
    `run ${runId} was started with ${what} given now:\n${lines.join("\n")}\n${hint}`,
    {
      details: {
        runId,
        differences: comparison.differences.map(({ field, recorded, current }) => ({
          field,
          recorded,
          current,
        })),
        ...(comparison.scorersChanged ? { hint: `stet rescore ${runId}` } : {}),
      },
    },
  );
}

/**
 * The run's configuration with `identity` recorded, and a history entry for `differences` when
 * there are any. What a resume writes (`updateRunConfig`) after its claim.
 */
export function withIdentity(
  config: RunConfig,
  identity: RunIdentity,
  differences: readonly IdentityDifference[],
  at: Date = new Date(),
): RunConfig {
  const next: RunConfig = { ...config, identity };
  if (differences.length > 0) {
    next.history = [...(config.history ?? []), historyEntry("eval-changed", differences, at)];
  }
  return next;
}

/** A history entry of the run's: what changed (`differences`, without their kinds) and when. */
export function historyEntry(
  change: RunHistoryEntry["change"],
  differences: readonly IdentityDifference[],
  at: Date = new Date(),
): RunHistoryEntry {
  return {
    at: at.toISOString(),
    change,
    differences: differences.map(({ field, recorded, current }) => ({ field, recorded, current })),
  };
}

/** The model a run executes with: its `--model`, else its solver's. */
export function runModel(config: RunConfig): string | undefined {
  if (config.model !== undefined) return config.model;
  const model = (config.identity?.solver ?? config.solver).model;
  return typeof model === "string" ? model : undefined;
}

function solverIdentity(solver: SolverFn): Record<string, Json> {
  return (
    solver.describe?.() ?? {
      kind: "function",
      name: solver.name || "anonymous",
      sourceSha256: sourceHash(solver),
    }
  );
}

function scorerIdentity(scorer: Scorer): ScorerIdentity {
  return {
    name: scorer.name,
    config: scorer.describe?.() ?? { kind: "function", sourceSha256: sourceHash(scorer.score) },
  };
}

/**
 * sha256 of a function's source in a layout-free form: whitespace kept only between two word
 * characters (as one space), and no `;` before `}`. The same TypeScript loaded by the bundle or by
 * tsx (which strips whitespace) then hashes alike; an edit of only that layout does not count.
 */
function sourceHash(fn: (...args: never[]) => unknown): string {
  return sha256(layoutFree(Function.prototype.toString.call(fn)));
}

/**
 * @example layoutFree("function f(a) {\n  return a;\n}") // "function f(a){return a}"
 */
export function layoutFree(source: string): string {
  return source
    .replace(/\s+/g, " ")
    .replace(/ (?=[^\w$])|(?<=[^\w$]) /g, "")
    .replace(/;}/g, "}")
    .trim();
}

function fileSha256(path: string): string | undefined {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return undefined;
  }
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function show(value: Json): string {
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
