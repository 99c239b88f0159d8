import { sumUsage } from "../../core/aggregate.js";
import type { FallbackOutcome } from "../../core/events.js";
import { formatCost, formatCount, formatKey, formatTokens } from "./format.js";

/** The commands a user needs after the store failed, already shell-quoted (see `resume-hint`). */
export interface RecoveryCommands {
  import: string;
  resume: string;
}

/**
 * What a run stopped by a store that stayed unwritable says under its error: the spend of this
 * invocation and of the run, both counting the attempts that never reached the store (they were
 * paid for); where the kept ones are and the commands that bring them back without buying them
 * again; and the lost ones by key, with their spend.
 *
 * @example renderFallback(outcome, { import: "stet import …", resume: "stet resume r_1" })
 */
export function renderFallback(outcome: FallbackOutcome, commands: RecoveryCommands): string {
  const { kept, lost } = outcome;
  const now = sumUsage(outcome.committed, kept, lost);
  const run = outcome.stored ? sumUsage(outcome.stored, kept, lost) : undefined;
  const outside = [
    kept.attempts > 0 ? `${formatCount(kept.attempts)} in the fallback file` : "",
    lost.attempts > 0 ? `${formatCount(lost.attempts)} lost` : "",
  ].filter(Boolean);
  const lines = [
    `cost     ${formatCost(now, true)} spent now · ` +
      (run ? `${formatCost(run, true)} total on this run` : "total on this run unknown") +
      ` · counting ${formatCount(kept.attempts + lost.attempts)} attempts not in the store ` +
      `(${outside.join(", ")}; ${formatCost(sumUsage(kept, lost))})`,
    `tokens   ${formatTokens(now)} (spent now)`,
  ];
  if (outcome.path !== null && kept.attempts > 0) {
    lines.push(`kept     ${formatCount(kept.attempts)} attempts in ${outcome.path}`);
  }
  if (lost.attempts > 0) {
    lines.push(
      `lost     ${formatCount(lost.attempts)} attempts could be written nowhere and will be bought again ` +
        `(${formatCost(lost)} · ${formatCount(lost.inputTokens)} in · ${formatCount(lost.outputTokens)} out): ` +
        lost.keys.map(formatKey).join(", "),
    );
  }
  if (outcome.path !== null && kept.attempts > 0) {
    lines.push(
      "Once the store is writable again, restore them with:",
      `  ${commands.import}`,
      "then finish the run (the imported attempts are not bought again):",
      `  ${commands.resume}`,
    );
  } else {
    lines.push("Once the store is writable again, resume with:", `  ${commands.resume}`);
  }
  return lines.join("\n");
}
