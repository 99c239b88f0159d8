import { StetError } from "../../core/errors.js";
import { ownerLiveness } from "../../engine/owner.js";
import { storedReport } from "../../engine/report.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { renderSummary } from "../render/summary.js";

/** `stet show <run-id>`: status, owner, progress, metrics, cost and errors of one run. */
export async function showCommand(
  runId: string,
  flags: { store?: string; json?: boolean },
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const store = await openStore(flags.store);
  try {
    const run = await store.getRun(runId);
    if (!run)
      throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`);
    const report = await storedReport(store, run);
    const owner = run.owner ? { ...run.owner, ...ownerLiveness(run.owner) } : null;
    if (flags.json) {
      const { executed: _e, wallMs: _w, resumed: _r, ...rest } = report;
      io.stdout.write(
        `${JSON.stringify({ ...rest, config: run.config, owner, createdAt: run.createdAt, updatedAt: run.updatedAt, note: run.note }, null, 2)}\n`,
      );
      return 0;
    }
    io.say(`run ${run.id} · ${run.evalName} · ${run.status}${run.note ? ` (${run.note})` : ""}`);
    io.say(
      `created ${run.createdAt} · model ${run.config.model ?? "(eval default)"} · ${run.config.epochs} epoch(s)`,
    );
    if (owner)
      io.say(
        `owner   pid ${owner.pid} on ${owner.host} · ${owner.alive ? "alive" : "dead"}: ${owner.reason}`,
      );
    io.say(
      renderSummary(report)
        .split("\n")
        .filter((l) => !/^(work|time) /.test(l))
        .join("\n"),
    );
    return 0;
  } finally {
    await store.close();
  }
}
