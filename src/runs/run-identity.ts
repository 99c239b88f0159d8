import { StetError } from "../core/errors.js";
import { canonicalJson, type Json } from "../core/json.js";
import type { Secret } from "../core/secrets.js";
import type {
  IdentityDifference,
  RunConfig,
  RunHistoryEntry,
  Run,
  RunIdentity,
  ScorerIdentity,
} from "../core/types.js";
import { runModel } from "../core/run-model.js";
import { shellQuote } from "../core/shell-quote.js";
import { evalIdentity, type IdentitySource } from "./eval-identity.js";

/**
 * The kind of a difference, which decides what `checkEval` does about it: `eval` (name, solver)
 * and `scorers` are refused, but where it says otherwise; `recorded` (the eval file's bytes, the
 * epochs the eval declares, which a resume does not use: the run's recorded epochs apply) is
 * accepted and recorded in the run's history.
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
export function compareIdentity(recorded: RunIdentity, given: RunIdentity): IdentityComparison {
  const current = withoutUnrecordedModules(recorded, given);
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
  // Limits decide which outcomes are limited: results under other limits would mix two evals.
  add("eval", "limits", recorded.limits as Json | undefined, current.limits as Json | undefined);
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
 * `current` without the `modules` a function solver or scorer of `recorded` does not have, when
 * the eval file's bytes are the same: such a run was recorded by a stet that did not record the
 * eval's local modules (an eval that starts importing one changes its own bytes), and resuming it
 * is no change of its eval.
 */
function withoutUnrecordedModules(recorded: RunIdentity, current: RunIdentity): RunIdentity {
  const sameFile =
    recorded.evalFileSha256 !== undefined && recorded.evalFileSha256 === current.evalFileSha256;
  if (!sameFile) return current;
  const strip = (was: Record<string, Json> | undefined, now: Record<string, Json>) => {
    if (was === undefined || "modules" in was || !("modules" in now)) return now;
    const { modules: _unrecorded, ...rest } = now;
    return rest;
  };
  const was = new Map(recorded.scorers.map((s) => [s.name, s.config]));
  return {
    ...current,
    solver: strip(recorded.solver, current.solver),
    scorers: current.scorers.map((s) => ({ ...s, config: strip(was.get(s.name), s.config) })),
  };
}

/** What the eval given for an existing run is for: what `checkEval` accepts depends on it. */
export type EvalUse =
  /** `stet resume`, `run --resume`, `run --run-id`, the API's resume and its start by `runId`. */
  | "resume"
  /** A worker joining a distributed run: it records nothing, so it accepts no change. */
  | "work"
  /** `stet rescore`, the API's rescore: changing the run's scorers is what it is for. */
  | "rescore";

/** What `checkEval` compares with the run's identity, and what the caller may accept. */
export interface EvalCheckInput {
  run: Run;
  /** The eval given now (a name or epochs left out are the run's). */
  eval: Pick<IdentitySource, "solver" | "scorers"> &
    Partial<Pick<IdentitySource, "name" | "epochs" | "limits">>;
  /** The file it was loaded from: its bytes are part of the identity. */
  evalPath?: string | undefined;
  use: EvalUse;
  /** Whether the run has a scored attempt: a run with none has nothing to mix with. */
  scoredAny: boolean;
  allowEvalChange?: boolean | undefined;
  /** The model asked for (`--model`): refused unless it is the run's. */
  model?: string | undefined;
  /** Secrets to keep out of the identity (see `evalIdentity`). */
  secrets?: readonly Secret[];
  /** The eval file as the user named it (`--eval`): the commands a refusal gives repeat it. */
  evalFile?: string | undefined;
}

/** An accepted eval: the identity to record, and how it differs from the recorded one. */
export interface AcceptedEval {
  ok: true;
  identity: RunIdentity;
  /** Empty when the recorded identity stands as it is. */
  differences: IdentityComparison["differences"];
  /**
   * Scorers whose configuration changed, or that are new: a stored score of theirs is the old
   * scorer's (none for a run without a recorded identity, whose scorers' configurations are unknown).
   */
  changedScorers: string[];
}

export type EvalCheck = AcceptedEval | { ok: false; error: StetError };

/**
 * The one gate every path that takes an eval for an existing run goes through (a resume, `run
 * --run-id`, a worker, a rescore, and the API's resume, start and rescore): compares the eval
 * given now with the run's identity and says whether it may go on, and what to record.
 *
 * - Another eval's name is refused always: a run holds one eval's results.
 * - The solver changed: refused unless `allowEvalChange` (not for a worker).
 * - The scorers changed: a rescore's business. A resume or a worker is refused, whatever
 *   `allowEvalChange` says, with the `stet rescore` command to run first: the run's metrics are
 *   over the scorers it records, and the outputs it has were scored by the old ones.
 * - A run with no scored attempt has nothing to mix with: a resume or a rescore accepts any
 *   change but another eval's name (a worker does not: other workers may use the recorded eval).
 * - The eval file's bytes, and the epochs the eval declares, are accepted and recorded.
 *
 * A run created before identities were recorded has only its scorers' names to compare.
 *
 * @example
 * const check = checkEval({ run, eval: ev, evalPath, use: "resume", scoredAny: true });
 * if (!check.ok) throw check.error;
 */
export function checkEval(input: EvalCheckInput): EvalCheck {
  const { run } = input;
  const recorded = run.config.identity;
  if (input.model !== undefined && !input.allowEvalChange) {
    const refusal = modelRefusal(run, input.model);
    if (refusal) return { ok: false, error: refusal };
  }
  const current = evalIdentity(
    {
      name: input.eval.name ?? run.evalName,
      solver: input.eval.solver,
      scorers: input.eval.scorers,
      epochs: input.eval.epochs ?? recorded?.epochs ?? run.config.epochs,
      limits: input.eval.limits,
    },
    input.evalPath,
    input.secrets,
  );
  // An eval given without its file cannot tell the file's bytes: the recorded hash stands.
  if (current.evalFileSha256 === undefined && recorded?.evalFileSha256 !== undefined) {
    current.evalFileSha256 = recorded.evalFileSha256;
  }
  if (current.evalName !== run.evalName) {
    return { ok: false, error: anotherEvalError(run, current.evalName) };
  }
  const comparison = recorded ? compareIdentity(recorded, current) : compareNames(run, current);
  const scorersChanged = comparison.differences.some((d) => d.kind === "scorers");
  const unmixed = !input.scoredAny && input.use !== "work";
  const evalRefused = comparison.evalChanged && !unmixed && !acceptsEvalChange(input);
  const scorersRefused = scorersChanged && !unmixed && input.use !== "rescore";
  if (evalRefused || scorersRefused) {
    return { ok: false, error: evalChangedError(run.id, comparison, input) };
  }
  return {
    ok: true,
    identity: current,
    // A run without an identity gets one recorded: that is no change of its eval.
    differences: recorded ? comparison.differences : [],
    changedScorers: recorded ? changedScorers(recorded.scorers, current.scorers) : [],
  };
}

function acceptsEvalChange(input: EvalCheckInput): boolean {
  return input.allowEvalChange === true && input.use !== "work";
}

/** A run without an identity: only its scorers' names are known, in order. */
function compareNames(run: Run, current: RunIdentity): IdentityComparison {
  const names = current.scorers.map((s) => s.name);
  const same = canonicalJson(names) === canonicalJson(run.config.scorers);
  return {
    differences: same
      ? []
      : [{ kind: "scorers", field: "scorers", recorded: run.config.scorers, current: names }],
    evalChanged: false,
    scorersChanged: !same,
    acceptable: same,
  };
}

/** The scorers of `current` that `recorded` does not have with the same configuration. */
export function changedScorers(
  recorded: readonly ScorerIdentity[],
  current: readonly ScorerIdentity[],
): string[] {
  const was = new Map(recorded.map((s) => [s.name, canonicalJson(s.config)]));
  return current.filter((s) => was.get(s.name) !== canonicalJson(s.config)).map((s) => s.name);
}

/** `E_EVAL_CHANGED` for `--model` other than the run's, or undefined when it is the run's. */
function modelRefusal(run: Run, asked: string): StetError | undefined {
  const model = runModel(run.config);
  if (model === undefined || sameModel(model, asked)) return undefined;
  return new StetError(
    "E_EVAL_CHANGED",
    `run ${run.id} executes model ${JSON.stringify(model)}, not ${JSON.stringify(asked)}: ` +
      "a resume goes on with the run's model. Start a new run for another model.",
    {
      details: {
        runId: run.id,
        differences: [{ field: "model", recorded: model, current: asked }],
      },
    },
  );
}

/** The same model, a `provider:` prefix on one side aside ("openai:gpt-4o" and "gpt-4o"). */
function sameModel(a: string, b: string): boolean {
  return a === b || a.endsWith(`:${b}`) || b.endsWith(`:${a}`);
}

/** `E_EVAL_CHANGED`: the eval given is another eval altogether (another name). */
function anotherEvalError(run: Run, evalName: string): StetError {
  const name = JSON.stringify(evalName);
  return new StetError(
    "E_EVAL_CHANGED",
    `run ${run.id} is a run of eval ${JSON.stringify(run.evalName)}, not of ${name} (the eval ` +
      `given now): a run holds one eval's results. Start a new run for ${name}, under another id.`,
    {
      details: {
        runId: run.id,
        evalName: run.evalName,
        differences: [{ field: "evalName", recorded: run.evalName, current: evalName }],
      },
    },
  );
}

/**
 * `E_EVAL_CHANGED`: the eval given is not the run's. Lists every difference and says what to do:
 * a changed solver goes on with `--allow-eval-change`; changed scorers are scored first with
 * `stet rescore` (the commands are in the message, and in `details.next` for shells that say
 * them otherwise: `{ rescore: args, resume: args }`, each after the run id).
 */
function evalChangedError(
  runId: string,
  comparison: IdentityComparison,
  input: EvalCheckInput,
): StetError {
  const lines = comparison.differences
    .filter((d) => d.kind !== "recorded")
    .map((d) => `  ${describeDifference(d)}`);
  const scorers = comparison.differences.some((d) => d.kind === "scorers");
  const header = comparison.evalChanged
    ? `run ${runId} was started with another eval than the one given now:`
    : `run ${runId} was started with other scorers than the ones given now:`;
  const evalArgs = input.evalFile === undefined ? [] : ["--eval", input.evalFile];
  const next = {
    rescore: [...evalArgs, ...(comparison.evalChanged ? ["--allow-eval-change"] : [])],
    resume: evalArgs,
  };
  const hint = nextStep(runId, comparison, input, next);
  return new StetError("E_EVAL_CHANGED", `${header}\n${lines.join("\n")}\n${hint}`, {
    details: {
      runId,
      differences: comparison.differences.map(({ field, recorded, current }) => ({
        field,
        recorded,
        current,
      })),
      ...(scorers && input.use === "resume" ? { next } : {}),
    },
  });
}

/** What a refusal of `checkEval` tells the user to do, by what the eval was given for. */
function nextStep(
  runId: string,
  comparison: IdentityComparison,
  input: EvalCheckInput,
  next: { rescore: string[]; resume: string[] },
): string {
  if (input.use === "work") {
    return (
      "The workers of a distributed run execute the eval it records, unchanged: give this worker " +
      "that eval, or start a new run for the changed one."
    );
  }
  if (input.use === "rescore" || !comparison.differences.some((d) => d.kind === "scorers")) {
    return (
      "Start a new run for the changed eval, or pass --allow-eval-change to go on with it anyway " +
      "(the change is recorded in the run's history)."
    );
  }
  const flag = input.allowEvalChange ? " (not even with --allow-eval-change)" : "";
  const recorded = comparison.evalChanged
    ? "; the changed eval is recorded in the run's history"
    : "";
  return (
    "The run's metrics are over the scorers it records, and its stored outputs were scored by " +
    `the old ones: a resume does not mix them${flag}. Start a new run for the changed eval, or ` +
    `score the stored outputs with the new scorers first (no solver calls${recorded}), then ` +
    `resume:\n  ${command("rescore", runId, next.rescore)}\n  ${command("resume", runId, next.resume)}`
  );
}

function command(verb: "rescore" | "resume", runId: string, args: readonly string[]): string {
  return [`stet ${verb}`, runId, ...args].map((w, i) => (i === 0 ? w : shellQuote(w))).join(" ");
}

/**
 * The run's configuration with `identity` recorded, its scorers (what its metrics are over) the
 * identity's, and a history entry for `differences` when there are any (`change`: what made
 * them). What a resume writes (`updateRunConfig`) after its claim, and a rescore.
 */
export function withIdentity(
  config: RunConfig,
  identity: RunIdentity,
  differences: readonly IdentityDifference[],
  change: RunHistoryEntry["change"] = "eval-changed",
  at: Date = new Date(),
): RunConfig {
  const next: RunConfig = { ...config, identity, scorers: identity.scorers.map((s) => s.name) };
  // The limits the engine executes under are the identity's (an accepted change included).
  if (identity.limits) next.limits = identity.limits;
  else delete next.limits;
  if (differences.length > 0) {
    next.history = [...(config.history ?? []), historyEntry(change, differences, at)];
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

/**
 * One difference on one line, long values cut. Two objects too long to show that differ in one
 * member only show that member (`solver.tools.lookup.description: …`), so a change deep in a
 * long value shows.
 *
 * @example describeDifference({ field: "solver.model", recorded: "a", current: "b" }) // 'solver.model: "a" → "b"'
 */
export function describeDifference(d: IdentityDifference): string {
  const { field, recorded, current } = narrowed(d.field, d.recorded, d.current);
  return `${field}: ${show(recorded)} → ${show(current)}`;
}

/** How long a value is shown before it is cut. */
const SHOWN = 120;

function narrowed(field: string, recorded: Json, current: Json): IdentityDifference {
  const isObject = (v: Json): v is { [key: string]: Json } =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  const short = JSON.stringify(recorded).length <= SHOWN && JSON.stringify(current).length <= SHOWN;
  if (short || !isObject(recorded) || !isObject(current)) return { field, recorded, current };
  const differing = [...new Set([...Object.keys(recorded), ...Object.keys(current)])].filter(
    (key) => canonicalJson(recorded[key] ?? null) !== canonicalJson(current[key] ?? null),
  );
  const [key] = differing;
  if (differing.length !== 1 || key === undefined) return { field, recorded, current };
  return narrowed(`${field}.${key}`, recorded[key] ?? null, current[key] ?? null);
}

function show(value: Json): string {
  const text = JSON.stringify(value);
  return text.length > SHOWN ? `${text.slice(0, SHOWN - 3)}...` : text;
}

/** The config a claim records, or undefined when it is the one recorded. */
export function recordedChange(
  recorded: RunConfig,
  identity: RunConfig,
  changed: boolean,
): RunConfig | undefined {
  const next: RunConfig = { ...identity };
  // The claim writes the changed samples' new content: no file's stamp vouches for it.
  if (changed) delete next.datasetStamp;
  return JSON.stringify(next) === JSON.stringify(recorded) ? undefined : next;
}
