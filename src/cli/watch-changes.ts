import type { RunReport } from "../core/events.js";
import { keyString } from "../core/keys.js";
import type { AttemptHead, Store } from "../store/types.js";
import { formatCount } from "./render/format.js";

/** One scorer between two iterations of `stet run --watch`. */
export interface ScorerMove {
  scorer: string;
  before: number | null;
  after: number | null;
  /** Keys scored in both runs whose value by this scorer went up, or down. */
  up: number;
  down: number;
}

/** What an iteration of `stet run --watch` changed since the one before it. */
export interface IterationChanges {
  executed: number;
  reused: number;
  moved: ScorerMove[];
}

/**
 * What changed between the previous iteration's run and this one's: the keys this one executed
 * and reused, and per scorer its mean before and after and the keys whose score moved. Read from
 * the two runs' stored attempts (a page at a time), never from what the process saw.
 */
export async function iterationChanges(
  store: Store,
  previous: RunReport,
  current: RunReport,
): Promise<IterationChanges> {
  const before = await outcomeScores(store, previous.runId);
  const after = await outcomeScores(store, current.runId);
  const moved = current.metrics.map((metric): ScorerMove => {
    const was = previous.metrics.find((m) => m.scorer === metric.scorer);
    let up = 0;
    let down = 0;
    for (const [key, scores] of after) {
      const now = scores.get(metric.scorer);
      const then = before.get(key)?.get(metric.scorer);
      if (now === undefined || then === undefined) continue;
      if (now > then) up++;
      else if (now < then) down++;
    }
    return { scorer: metric.scorer, before: was?.mean ?? null, after: metric.mean, up, down };
  });
  return {
    executed: current.plan.toExecute,
    reused: current.reuse?.reused ?? 0,
    moved,
  };
}

/** Per key, its scored outcome's values by scorer (keys with no scored attempt left out). */
async function outcomeScores(
  store: Store,
  runId: string,
): Promise<Map<string, Map<string, number>>> {
  const latest = new Map<string, AttemptHead>();
  for await (const page of store.reads.attemptHeadPages(runId)) {
    for (const head of page) {
      if (head.status !== "scored") continue;
      const key = keyString(head);
      const held = latest.get(key);
      if (!held || head.attempt > held.attempt) latest.set(key, head);
    }
  }
  const scores = new Map<string, Map<string, number>>();
  for (const [key, head] of latest) {
    const values = new Map<string, number>();
    for (const score of head.scores)
      if (score.value !== null) values.set(score.scorer, score.value);
    scores.set(key, values);
  }
  return scores;
}

/** The lines `stet run --watch` prints after an iteration: what it executed, and what moved. */
export function renderChanges(changes: IterationChanges): string[] {
  const mean = (value: number | null) => (value === null ? "-" : value.toFixed(4));
  const keys = (n: number) => `${formatCount(n)} ${n === 1 ? "key" : "keys"}`;
  return [
    `changed  ${keys(changes.executed)} executed · ${formatCount(changes.reused)} reused`,
    ...changes.moved.map(
      (m) =>
        `         ${m.scorer}: ${mean(m.before)} → ${mean(m.after)}` +
        ` (${formatCount(m.up)} up, ${formatCount(m.down)} down)`,
    ),
  ];
}
