import type { Json } from "../core/json.js";
import type { JournalEntry, JournalFilter, Store } from "../store/types.js";

/** A journal entry as exports show it: a step of the attempt's trajectory. */
export function trajectoryStep(entry: JournalEntry): Json {
  const step: Record<string, Json> = {
    step: entry.step,
    kind: entry.kind,
    name: entry.name,
    input: entry.input,
    result: entry.result,
  };
  if (entry.error) step.error = { ...entry.error };
  if (entry.usage) step.usage = { ...entry.usage };
  step.recordedAt = entry.recordedAt;
  step.durationMs = entry.durationMs;
  if (entry.redacted) step.redacted = [...entry.redacted];
  return step;
}

/**
 * The journals of a run's committed attempts, by attempt: one read for the whole run (nothing
 * for a run that never used `ctx.step`), or for the samples `filter` names (a streamed export's
 * page: its range of sample ids).
 */
export async function loadTrajectories(
  store: Store,
  runId: string,
  filter: JournalFilter = {},
): Promise<(a: { sampleId: string; epoch: number; attempt: number }) => Json[] | undefined> {
  const byAttempt = new Map<string, Json[]>();
  for (const entry of await store.journal.list(runId, filter)) {
    if (entry.attempt === null) continue;
    const key = `${entry.sampleId}\u0000${entry.epoch}\u0000${entry.attempt}`;
    let steps = byAttempt.get(key);
    if (!steps) byAttempt.set(key, (steps = []));
    steps.push(trajectoryStep(entry));
  }
  return (a) => byAttempt.get(`${a.sampleId}\u0000${a.epoch}\u0000${a.attempt}`);
}
