import { cancelRun } from "../../runs/cancel-run.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { EXIT } from "../exit-codes.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { hintLine, resumeHint } from "../resume-hint.js";

export interface CancelFlags {
  store?: string;
  json?: boolean;
  /** How long to wait for the run to stop, in ms; 0 returns once the request is recorded. */
  wait?: number;
}

/**
 * `stet cancel <run-id>`: asks the run's owner, on this host or any other sharing the store, to
 * stop as on SIGINT (in-flight samples finish, the run becomes interrupted and resumable), and
 * waits until it has. A run whose owner is dead is recovered at once. A run nobody executes that
 * waits on provider batches (`--detach`) has them cancelled at the provider (exit 1 when one
 * could not be).
 */
export async function cancelCommand(runId: string, flags: CancelFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const store = await openStore(flags.store, stale);
  try {
    const waitMs = flags.wait ?? 60_000;
    const result = await cancelRun({
      store,
      runId,
      ...stale,
      ...(waitMs > 0 ? { waitMs } : {}),
    });
    const { run, batches } = result;
    if (flags.json) {
      const { id, status, note } = run;
      const body = { runId: id, outcome: result.status, status, note, ...(batches && { batches }) };
      io.stdout.write(`${JSON.stringify(body)}\n`);
    }
    if (batches) {
      const { cancelled, ended, left } = batches;
      io.say(
        `run ${runId}: ${cancelled} provider batch${cancelled === 1 ? "" : "es"} cancelled` +
          (ended > 0 ? `, ${ended} ended already` : "") +
          "; what finished in them is collected by a resume",
      );
      for (const { batch, reason } of left) io.say(`  ${batch} left as it is: ${reason}`);
      if (left.length > 0) return EXIT.fatal;
    }
    switch (result.status) {
      case "requested":
        io.say(`cancel of run ${runId} requested; its owner stops at its next heartbeat`);
        return EXIT.ok;
      case "still-running":
        io.say(`cancel of run ${runId} requested; it is still running after ${waitMs / 1000}s`);
        return EXIT.fatal;
      default: {
        const next =
          run.status === "completed"
            ? ""
            : `; resume it with: ${hintLine(resumeHint(runId, flags.store))}`;
        io.say(`run ${runId} is ${run.status}${run.note ? ` (${run.note})` : ""}${next}`);
        return EXIT.ok;
      }
    }
  } finally {
    await store.close();
  }
}
