import { readRun } from "../../runs/read-run.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { renderSummary } from "../render/summary.js";
import { hintLine, resumeHint } from "../resume-hint.js";

/**
 * `stet show <run-id>`: status, owner, progress, metrics, cost and errors of one run, and the
 * command that resumes it when it is resumable. A run whose owner died is recovered
 * (interrupted, resumable) first, so it never shows as running.
 */
export async function showCommand(
  runId: string,
  flags: { store?: string; json?: boolean },
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const store = await openStore(flags.store, { create: false, ...stale });
  try {
    const { run, owner, report } = await readRun(store, runId, { ...stale, recover: true });
    if (flags.json) {
      const { executed: _e, wallMs: _w, resumed: _r, ...rest } = report;
      const { config, createdAt, updatedAt, note } = run;
      // The fencing token is the owner's own: whoever holds it may write as the owner.
      const { token: _t, ...shown } = owner ?? { token: "" };
      const view = { ...rest, config, owner: owner && shown, createdAt, updatedAt, note };
      io.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
      return 0;
    }
    io.say(`run ${run.id} · ${run.evalName} · ${run.status}${run.note ? ` (${run.note})` : ""}`);
    io.say(
      `created ${run.createdAt} · model ${run.config.model ?? "(eval default)"} · ${run.config.epochs} epoch(s)`,
    );
    if (owner) {
      const liveness = `${owner.alive ? "alive" : "dead"}: ${owner.reason}`;
      io.say(`owner   pid ${owner.pid} on ${owner.host} · ${liveness}`);
    }
    const summary = renderSummary(report).split("\n");
    io.say(summary.filter((l) => !/^(work|time) /.test(l)).join("\n"));
    // Interrupted or errored with keys left: the command that finishes it, for this store.
    if ((run.status === "interrupted" || run.status === "errored") && report.counts.remaining > 0) {
      const hint = resumeHint(run.id, flags.store);
      // Stopped by its spend cap, which a resume keeps: only a higher one lets it go on.
      const capped = run.status === "interrupted" && run.note?.startsWith("budget: ");
      const line = capped ? { ...hint, command: `${hint.command} --max-cost <higher usd>` } : hint;
      io.say(`resume   ${hintLine(line)}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}
