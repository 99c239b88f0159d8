import type { ModelCaller, Scorer, SolverFn } from "../core/eval.js";
import type { RunEvent } from "../core/events.js";
import { keyString } from "../core/keys.js";
import type { Plan } from "../core/plan.js";
import type { Redactor } from "../core/secrets.js";
import type { Trajectory } from "../core/trajectory.js";
import type { Attempt, Key, Run, Scoring } from "../core/types.js";
import type { AttemptWriter } from "./attempt-writer.js";
import type { BatchBroker } from "./batch-broker.js";
import { executeKey } from "./execute-key.js";
import { executeScoring, type RescoreUnit } from "./execute-scoring.js";
import type { KeyJournals } from "./key-journal.js";
import { isFinal, retryVerdict } from "./retry-policy.js";
import type { RunProgress } from "./run-progress.js";
import type { SpendGate } from "./spend-gate.js";
import type { ReplyCache } from "./reply-cache.js";
import type { RateGate } from "../core/rate-limits.js";
import type { StopControl } from "./stop-control.js";
import { snapshotRerunAfterOf } from "./snapshot-keys.js";

/** How a key's execution ended, for its source (a worker's lease). */
export type KeyEnd = "scored" | "errored" | "abandoned";

export interface KeyRunnerParts {
  run: Pick<Run, "id" | "config">;
  plan: Pick<Plan, "rerunAfter">;
  solver: SolverFn;
  scorers: readonly Scorer[];
  callModel?: ModelCaller | undefined;
  /** The run's reply cache (the eval's `cache`; absent: none). */
  cache?: ReplyCache | undefined;
  /** The run's rate limits (absent: none). */
  rateGate?: RateGate | undefined;
  /** The run's provider batches (`--batch`; absent: none). */
  batches?: BatchBroker | undefined;
  /** The name of the scorings this execution makes (`Scoring.scoring`). */
  pass: string;
  writer: Pick<AttemptWriter, "markInflight" | "write" | "writeScoring">;
  counts: RunProgress;
  stops: StopControl;
  gate: SpendGate | undefined;
  journals: KeyJournals;
  /** A stored attempt's trajectory, for the scorers that score it again (storedTrajectory). */
  trajectory?: (unit: RescoreUnit) => Promise<Trajectory>;
  redactor: Redactor;
  /**
   * An attempt is committed and counted (`final`: its key's outcome in this invocation); `key`:
   * the key object it was executed for.
   */
  committed: (attempt: Attempt, final: boolean, key: Key) => void;
  emit: (event: RunEvent) => void;
}

/**
 * Executes one key to its end: its attempts, each committed before it counts, up to the run's
 * retries as the retry policy (`retryVerdict`) says; a scorer error's retries score the stored
 * output again. Also scores one stored attempt again (`score`), for a rescore or a resume.
 *
 * @example const end = await runner.run({ sampleId: "q1", epoch: 1 }); // "scored"
 */
export class KeyRunner {
  readonly #parts: KeyRunnerParts;
  /** Asked once an attempt is committed: whether the execution stops (the cap counts it out). */
  readonly #halted: () => boolean;

  constructor(parts: KeyRunnerParts) {
    this.#parts = parts;
    const { stops, gate, counts } = parts;
    this.#halted = () =>
      stops.reason !== null || (gate !== undefined && gate.over(counts.progress.inflight - 1));
  }

  /** Executes `key` to its end: scored, errored (its outcome), or abandoned by a stop. */
  async run(key: Key): Promise<KeyEnd> {
    const { run, plan, writer, counts, stops, gate, journals } = this.#parts;
    const { progress } = counts;
    const { retries } = run.config;
    const record = counts.recordOf(key);
    const rerunAfter = snapshotRerunAfterOf(key) ?? plan.rerunAfter.get(keyString(key));
    // The errored attempt a retry follows: the retry replays what that one's journal succeeded at.
    let retryOf: number | undefined;
    for (let i = 0; i <= retries; i++) {
      writer.markInflight(key);
      progress.inflight++;
      try {
        const draft = await executeKey({
          key,
          record,
          solver: this.#parts.solver,
          scorers: this.#parts.scorers,
          callModel: this.#parts.callModel,
          cache: this.#parts.cache,
          rateGate: this.#parts.rateGate,
          batch: this.#parts.batches?.channel(key),
          runId: run.id,
          model: run.config.model,
          timeoutMs: run.config.timeoutMs,
          limits: run.config.limits,
          abort: stops.signal,
          redactor: this.#parts.redactor,
          journal: await journals.of(key, retryOf),
        });
        const attempt = await writer.write(
          rerunAfter === undefined ? draft : { ...draft, rerunAfter },
        );
        const warning = gate?.observe(attempt);
        // The retry's verdict below must see this attempt's cost: read once it is stored.
        if (gate && attempt.status !== "scored") await gate.look();
        const verdict = retryVerdict(attempt, i, retries, this.#halted);
        this.#parts.committed(attempt, isFinal(verdict), key);
        if (warning) this.#parts.emit({ type: "warning", code: "unpriced", message: warning });
        // A scorer that threw leaves the output standing: retries score it again, never re-solve.
        if (verdict === "rescore") {
          return (await this.#rescoreRetries(attempt, record, retries - i)) ? "scored" : "errored";
        }
        if (verdict !== "retry") return verdict;
        retryOf = attempt.attempt;
      } finally {
        progress.inflight--;
      }
    }
    return "errored";
  }

  /** Scores a stored attempt's output again and commits the scoring. */
  async score(unit: RescoreUnit): Promise<Scoring> {
    const { run, counts, stops } = this.#parts;
    counts.progress.inflight++;
    try {
      const draft = await executeScoring({
        unit,
        scorers: this.#parts.scorers,
        pass: this.#parts.pass,
        callModel: this.#parts.callModel,
        cache: this.#parts.cache,
        rateGate: this.#parts.rateGate,
        runId: run.id,
        ...(run.config.model === undefined ? {} : { model: run.config.model }),
        ...(run.config.timeoutMs === undefined ? {} : { timeoutMs: run.config.timeoutMs }),
        abort: stops.signal,
        redactor: this.#parts.redactor,
        trajectory: this.#parts.trajectory,
      });
      return await this.#parts.writer.writeScoring(draft);
    } finally {
      counts.progress.inflight--;
    }
  }

  /**
   * A scorer error's retries: the scorers again on the stored output, up to `left` times. Whether
   * the key ended scored.
   */
  async #rescoreRetries(
    attempt: Attempt,
    record: Plan["samples"][number],
    left: number,
  ): Promise<boolean> {
    const { counts, stops } = this.#parts;
    const unit: RescoreUnit = {
      key: attempt,
      attempt: attempt.attempt,
      record,
      output: attempt.output,
      current: attempt.scores,
      rerun: new Set(),
      usage: attempt.usage,
      failed: attempt.status === "error",
    };
    for (let i = 0; i < left && stops.reason === null; i++) {
      const scoring = await this.score(unit);
      if (scoring.status === "scored" || i === left - 1) {
        counts.scoringCommitted(scoring);
        return scoring.status === "scored";
      }
      // Not final: the key's error is counted once, by the last try.
      counts.scoringCounted(scoring);
      unit.current = scoring.scores;
    }
    // Stopped before the retries ran out: the key's error stands, resume scores it again.
    counts.progress.errored++;
    return false;
  }
}
