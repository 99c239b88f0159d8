import type { RateGate } from "../core/rate-limits.js";
import type { ModelCaller, Scorer } from "../core/eval.js";
import type { Json } from "../core/json.js";
import type { Redactor } from "../core/secrets.js";
import type { Trajectory } from "../core/trajectory.js";
import type { Key, SampleRecord, Score, ScoringDraft, Usage } from "../core/types.js";
import { withTimeout } from "./attempt-signal.js";
import { attemptRedaction } from "./attempt-redaction.js";
import { addUsage } from "./execute-key.js";
import { scoreOutput } from "./score-output.js";
import { context, type Spent } from "./solver-context.js";
import type { ReplyCache } from "./reply-cache.js";

/**
 * A stored attempt to score again: its output, the scores it has now, and which scorers to run.
 * Built by `runs/` from the store (a rescore's plan, or a resume's scorer errors).
 */
export interface RescoreUnit {
  key: Key;
  /** The attempt's number. */
  attempt: number;
  /** The sample as the attempt executed it. */
  record: SampleRecord;
  output: Json;
  /** The attempt's current scores (its latest scoring's, else its own). */
  current: readonly Score[];
  /** Scorers to run even when the attempt has a score from them (a rescore's request). */
  rerun: ReadonlySet<string>;
  /** The attempt's usage and whether it ended in error: see StoredAttemptRef. */
  usage?: Usage | null;
  failed?: boolean;
}

export interface ScoringTask {
  unit: RescoreUnit;
  /** The scorers whose scores count, in order: each one runs, or its current score is carried. */
  scorers: readonly Scorer[];
  pass: string;
  callModel?: ModelCaller | undefined;
  /** The run's reply cache (a judge's calls are served from it); absent: none. */
  cache?: ReplyCache | undefined;
  /** The run's rate limits (absent: none). */
  rateGate?: RateGate | undefined;
  runId: string;
  model?: string;
  timeoutMs?: number;
  abort: AbortSignal;
  redactor?: Redactor | undefined;
  /** The stored attempt's trajectory for its scorers (see storedTrajectory); absent: none given. */
  trajectory?: ((unit: RescoreUnit) => Promise<Trajectory>) | undefined;
}

/**
 * Scores one stored output again: every scorer in `rerun`, and every one the attempt has no
 * usable score from (never scored, or its score is an error), in the eval's order; the other
 * scores are carried over as they are, so a judge that scored is never bought again. Scores of
 * scorers the eval no longer has are left out: they stay in the attempt's history, not in its
 * current set. The solver is never called. A throwing scorer gives an error scoring whose other
 * scores stand (the output still stands too), and its spend (usage, re-sent requests) is the
 * scoring's; an abort by the run throws `AttemptAborted`. The scorers get the attempt's
 * trajectory from the store (`task.trajectory`), read once before they run.
 */
export async function executeScoring(task: ScoringTask): Promise<ScoringDraft> {
  const t0 = performance.now();
  const { unit } = task;
  const spent: Spent = { usage: [], retries: 0 };
  // A score that is an error is no score: its scorer runs again, the others are carried.
  const current = new Map(
    unit.current.filter((s) => s.error === undefined).map((s) => [s.scorer, s]),
  );
  const toRun = task.scorers.filter((s) => unit.rerun.has(s.name) || !current.has(s.name));
  const scrub = attemptRedaction(task.redactor);
  const trajectory = toRun.length > 0 ? await task.trajectory?.(unit) : undefined;
  const pass = await withTimeout(task, (signal) => {
    const ctx = context({ ...task, key: unit.key }, signal, spent, undefined, scrub);
    return scoreOutput(unit.record.sample, unit.output, toRun, ctx, signal, trajectory);
  });
  // Each scorer that ran has its value or its error; one the timeout cut off has no score: its
  // old one is what it was asked to replace.
  const ran = new Map(pass.scores.map((s) => [s.scorer, s]));
  const scores: Score[] = [];
  for (const scorer of task.scorers) {
    const score = toRun.includes(scorer) ? ran.get(scorer.name) : current.get(scorer.name);
    if (score) scores.push(score);
  }
  const error = pass.error && { ...pass.error, message: scrub.text(pass.error.message) };
  const rescored = toRun.map((s) => s.name).filter((name) => ran.has(name));
  const draft: ScoringDraft = {
    sampleId: unit.key.sampleId,
    epoch: unit.key.epoch,
    attempt: unit.attempt,
    pass: task.pass,
    status: error ? "error" : "scored",
    scores: scrub.scores(scores),
    rescored,
    // A describe() that put a key in its settings does not put it in the store.
    scorerConfig: scrub.json(
      Object.fromEntries(
        toRun
          .filter((s) => rescored.includes(s.name))
          .map((s): [string, Json] => [s.name, s.describe?.() ?? { kind: "function" }]),
      ),
    ) as Record<string, Json>,
    error,
    usage: [...spent.usage, ...pass.spent].reduce<Usage | null>(addUsage, null),
    // The judges' re-sent requests: the scoring's, as its usage is.
    retries: spent.retries,
    scoredAt: new Date().toISOString(),
    durationMs: Math.round(performance.now() - t0),
  };
  if (scrub.found.size > 0) draft.redacted = [...scrub.found].sort();
  return draft;
}
