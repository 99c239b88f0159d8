import type { Scorer, ScorerArgs, SolverContext } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { normalizeScore } from "../core/normalize.js";
import { usageSchema } from "../core/schemas.js";
import type { Trajectory } from "../core/trajectory.js";
import type { AttemptError, SampleRecord, Score, Usage } from "../core/types.js";
import { solverError, untilAborted } from "./attempt-signal.js";

/** What a pass of scorers over one output gave. */
export interface ScorerPass {
  /**
   * One per scorer that ran, in order: its value, or (it threw) an entry with its `error`. Each
   * score stands on its own: a scorer that threw does not stop the ones after it. Only the
   * attempt's timeout (or abort) ends the pass, and the scorers after it have no entry.
   */
  scores: Score[];
  /** A `scorer` error naming the first scorer that threw (and how many others did), or the timeout. */
  error: AttemptError | null;
  /** What the scorers paid for (a judge's usage), whatever their verdict. */
  spent: Usage[];
}

/**
 * Runs `scorers` over an output in order. A scorer that throws gets an error entry in place of
 * its score and the pass goes on; what it reported paying for (a `usage` on what it threw, see
 * ScorerError) is still spent. The attempt's timeout ends the pass as a timeout; an abort by the
 * run throws `AttemptAborted`. Every scorer is given the attempt's `trajectory`.
 */
export async function scoreOutput(
  sample: SampleRecord["sample"],
  output: Json,
  scorers: readonly Scorer[],
  ctx: SolverContext,
  signal: AbortSignal,
  trajectory?: Trajectory,
): Promise<ScorerPass> {
  // A plain object, copied for each scorer: a lazy getter would cost more to make (~1.4 µs, an
  // accessor literal) than the trajectory of a short trail.
  const args: ScorerArgs = trajectory
    ? { sample, output, ctx, trajectory }
    : { sample, output, ctx };
  const pass: ScorerPass = { scores: [], error: null, spent: [] };
  const failed: Score[] = [];
  for (const scorer of scorers) {
    try {
      const value = await untilAborted(
        Promise.resolve().then(() => scorer.score({ ...args })),
        signal,
      );
      // A scorer that paid for a model (a judge) reports it; paid for even if its value is bad.
      if (typeof value === "object" && value.usage) pass.spent.push(value.usage);
      pass.scores.push(normalizeScore(scorer.name, value));
    } catch (thrown) {
      const usage = thrownUsage(thrown);
      if (usage) pass.spent.push(usage);
      const typed = solverError(thrown, signal);
      // The attempt's own timeout: every scorer after this one would meet the same dead signal.
      if (signal.aborted) {
        pass.error = typed;
        break;
      }
      const score: Score = { scorer: scorer.name, value: null, error: typed.message };
      pass.scores.push(score);
      failed.push(score);
    }
  }
  pass.error ??= scorerError(failed);
  return pass;
}

/** The attempt's error when scorers threw: the first one's, naming the others. */
function scorerError(failed: readonly Score[]): AttemptError | null {
  const [first, ...others] = failed;
  if (first === undefined) return null;
  const more =
    others.length === 0
      ? ""
      : ` (and ${others.length} more scorer${others.length > 1 ? "s" : ""} failed: ${others.map((s) => s.scorer).join(", ")})`;
  return { type: "scorer", scorer: first.scorer, message: `${first.error ?? ""}${more}` };
}

/** The usage a scorer put on what it threw (a judge paid for before it failed), when valid. */
function thrownUsage(thrown: unknown): Usage | undefined {
  if (typeof thrown !== "object" || thrown === null || !("usage" in thrown)) return undefined;
  const parsed = usageSchema.safeParse(thrown.usage);
  return parsed.success ? parsed.data : undefined;
}
