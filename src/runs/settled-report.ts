import type { RunReport } from "../core/events.js";
import { listedKeys, type ResumePlan } from "../core/plan.js";
import type { Run } from "../core/types.js";
import { figuresReport } from "../engine/figures-report.js";
import { buildReport, summarizePlan } from "../engine/report.js";
import type { Store } from "../store/types.js";

/**
 * The report of a resume with nothing to execute: from the run's figures where they give it
 * exactly (`figuresReport`; not when samples changed, whose fingerprints the plan's records
 * define), else folded from the stored attempts a page at a time.
 */
export async function settledReport(run: Run, plan: ResumePlan, store: Store): Promise<RunReport> {
  const summary = summarizePlan(plan);
  const figures =
    plan.changed.length === 0 ? await figuresReport(store, run, { invocation: true }) : undefined;
  if (figures) return { ...figures, resumed: true, plan: summary, preserved: plan.preserved };
  // A plan that counts its keys only holds no samples: the report reads the snapshot's pages.
  const samples = listedKeys(plan) ? { samples: plan.samples } : {};
  const input = { store, run, ...samples, plan: summary, resumed: true, wallMs: 0 };
  return buildReport(input);
}
