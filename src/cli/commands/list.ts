import { listRuns } from "../../runs/read-run.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { formatCount, table } from "../render/format.js";

/**
 * `stet list`: runs with status and progress, newest first. A run whose owner died is recovered
 * (interrupted, resumable) before it is listed, so it never shows as running.
 */
export async function listCommand(flags: { store?: string; json?: boolean }): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const store = await openStore(flags.store, stale);
  try {
    const runs = await listRuns(store, {}, { ...stale, recover: true });
    const rows = runs.map(({ run, counts }) => ({
      id: run.id,
      eval: run.evalName,
      status: run.status,
      total: counts.total,
      done: counts.scored,
      errored: counts.errored,
      remaining: counts.remaining,
      model: run.config.model ?? null,
      createdAt: run.createdAt,
      updatedAt: run.updatedAt,
    }));
    if (flags.json) {
      io.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    if (rows.length === 0) {
      io.say(`no runs in ${store.location}`);
      return 0;
    }
    const header = ["id", "eval", "status", "done", "errored", "created"];
    const cells = rows.map((r) => [
      r.id,
      r.eval,
      r.status,
      `${formatCount(r.done)}/${formatCount(r.total)}`,
      formatCount(r.errored),
      r.createdAt.replace("T", " ").slice(0, 19),
    ]);
    io.say(table([header, ...cells], [false, false, false, true, true, false]));
    return 0;
  } finally {
    await store.close();
  }
}
