import type { WorkerView } from "../../runs/run-workers.js";
import { formatCount, formatDuration, table } from "./format.js";

/**
 * A distributed run's workers, one line each under a header: id, where, concurrency, keys done,
 * rejected writes (only when some were), state and the age of its last heartbeat.
 *
 * @example workersTable(workers) // "  id        host …\n  3b1d07ae  web-1 …"
 */
export function workersTable(workers: readonly WorkerView[]): string {
  const anyRejected = workers.some((w) => w.rejected > 0);
  const header = ["id", "host", "pid", "conc", "done", ...(anyRejected ? ["rejected"] : [])];
  header.push("state", "heartbeat");
  const rows = workers.map((w) => [
    w.id,
    w.host,
    String(w.pid),
    String(w.concurrency),
    formatCount(w.keysDone),
    ...(anyRejected ? [w.rejected > 0 ? formatCount(w.rejected) : ""] : []),
    w.leaseExpired ? "active (lease expired)" : w.state,
    `${formatDuration(Math.max(0, w.heartbeatAgeMs))} ago`,
  ]);
  const numeric = [false, false, true, true, true, ...(anyRejected ? [true] : []), false, false];
  return table([header, ...rows], numeric)
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
}

/**
 * A run's status as `stet list` shows it: a distributed run says so, and while it runs, how many
 * workers execute it.
 *
 * @example listedStatus("running", 3) // "running (distributed, 3 workers)"
 */
export function listedStatus(status: string, activeWorkers: number | undefined): string {
  if (activeWorkers === undefined) return status;
  if (status !== "running") return `${status} (distributed)`;
  return `${status} (distributed, ${activeWorkers} worker${activeWorkers === 1 ? "" : "s"})`;
}
