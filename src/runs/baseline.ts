import { StetError } from "../core/errors.js";
import { formatLabels, parseLabels, type RunLabels } from "../core/labels.js";
import { runModel } from "../core/run-model.js";
import type { Run } from "../core/types.js";
import type { Store } from "../store/types.js";
import { compareIdentity, describeDifference } from "./run-identity.js";
import { requireRun } from "./require-run.js";

/** What `--baseline` names: a run, the newest comparable run, or the newest one with labels. */
export type BaselineSelector =
  { kind: "run"; runId: string } | { kind: "latest" } | { kind: "labels"; labels: RunLabels };

/**
 * `--baseline` as given (repeatable; each a run id, `latest`, or `key=value` labels separated by
 * commas) as a selector. Labels may not be mixed with a run id or `latest` (`E_USAGE`).
 *
 * @example parseBaselineSelector(["branch=main"]) // { kind: "labels", labels: { branch: "main" } }
 */
export function parseBaselineSelector(items: readonly string[]): BaselineSelector {
  const labelled = items.filter((item) => item.includes("="));
  if (labelled.length === items.length && items.length > 0)
    return { kind: "labels", labels: parseLabels(items, "--baseline") };
  if (items.length !== 1)
    throw new StetError(
      "E_USAGE",
      `--baseline takes one run id, latest, or key=value labels (given: ${items.join(", ")})`,
    );
  const [item] = items as [string];
  return item === "latest" ? { kind: "latest" } : { kind: "run", runId: item };
}

/** The baseline chosen for a run, and how it compares with it. */
export interface ChosenBaseline {
  run: Run;
  /** The selector as the user wrote it: `branch=main`, `latest`, or the run id. */
  selector: string;
  /** The target's creation time minus the baseline's, ms (negative: the baseline is newer). */
  ageMs: number;
  /**
   * How the target's identity differs from the baseline's where a comparison still means
   * something (the solver's code, prompt or modules, the eval file's bytes): the change under
   * test, one line each.
   */
  changes: string[];
}

/**
 * The run `target` is compared with (`stet diff --baseline`): the named run, or the newest
 * **complete** run of the same eval, other than the target, whose labels match (`latest`: any)
 * and whose comparable identity matches (`baselineBlockers`). Throws `E_NO_BASELINE` when no run
 * is a candidate, and `E_BASELINE_MISMATCH` with the field diff when the named run, or the
 * newest candidate when none matches, is of another eval, model, scorers, limits or epochs.
 *
 * @example const chosen = await findBaseline(store, run, { kind: "labels", labels: { branch: "main" } });
 */
export async function findBaseline(
  store: Store,
  target: Run,
  selector: BaselineSelector,
): Promise<ChosenBaseline> {
  const said = selectorText(selector);
  const chosen = (run: Run): ChosenBaseline => ({
    run,
    selector: said,
    ageMs: Date.parse(target.createdAt) - Date.parse(run.createdAt),
    changes: compareRuns(run, target).changes,
  });
  if (selector.kind === "run") {
    const run = await requireRun(store, selector.runId);
    refuseBlocked(run, target);
    return chosen(run);
  }
  const listed = await store.reads.listRuns({
    evalName: target.evalName,
    status: "completed",
    ...(selector.kind === "labels" ? { labels: selector.labels } : {}),
  });
  const candidates = listed.map((l) => l.run).filter((run) => run.id !== target.id);
  const match = candidates.find((run) => compareRuns(run, target).blockers.length === 0);
  if (match) return chosen(match);
  if (candidates[0]) refuseBlocked(candidates[0], target);
  const labelled = selector.kind === "labels" ? ` labelled ${formatLabels(selector.labels)}` : "";
  throw new StetError(
    "E_NO_BASELINE",
    `no baseline for ${target.id}: no complete run of eval "${target.evalName}"${labelled} other than it`,
    { details: { runId: target.id, selector: said } },
  );
}

function refuseBlocked(run: Run, target: Run): void {
  const { blockers } = compareRuns(run, target);
  if (blockers.length === 0) return;
  throw new StetError(
    "E_BASELINE_MISMATCH",
    `baseline ${run.id} is not comparable with ${target.id}:\n  ${blockers.join("\n  ")}`,
    { details: { baseline: run.id, runId: target.id, differences: blockers } },
  );
}

/**
 * How a baseline's identity differs from the target's: `blockers` make their scores measure
 * different things (another eval, model, scorers or their configuration, limits, epochs);
 * `changes` are what a change under test alters (the rest of the solver, the eval file's bytes).
 */
function compareRuns(baseline: Run, target: Run): { blockers: string[]; changes: string[] } {
  if (baseline.evalName !== target.evalName)
    return {
      blockers: [
        describeDifference({
          field: "evalName",
          recorded: baseline.evalName,
          current: target.evalName,
        }),
      ],
      changes: [],
    };
  const was = baseline.config.identity;
  const now = target.config.identity;
  const blockers: string[] = [];
  const changes: string[] = [];
  const modelWas = runModel(baseline.config) ?? null;
  const modelNow = runModel(target.config) ?? null;
  if (modelWas !== modelNow)
    blockers.push(describeDifference({ field: "model", recorded: modelWas, current: modelNow }));
  if (!was || !now) {
    const older = !was ? baseline : target;
    blockers.push(`run ${older.id} recorded no identity (made by an older stet)`);
    return { blockers, changes };
  }
  for (const d of compareIdentity(was, now).differences) {
    if (d.field === "solver.model") continue; // said once, as `model`, above
    const underTest = d.field.startsWith("solver.") || d.field === "evalFileSha256";
    (underTest ? changes : blockers).push(describeDifference(d));
  }
  return { blockers, changes };
}

function selectorText(selector: BaselineSelector): string {
  switch (selector.kind) {
    case "run":
      return selector.runId;
    case "latest":
      return "latest";
    case "labels":
      return Object.entries(selector.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
  }
}
