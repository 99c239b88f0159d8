import type { Progress } from "../../core/events.js";
import { formatCost, formatCount, formatDuration } from "./format.js";

export interface ProgressRenderer {
  update(progress: Progress): void;
  /** Clears the live line (before printing anything else). */
  done(): void;
}

/**
 * A live one-line bar on a TTY (redrawn at most 10 times a second), periodic plain lines
 * otherwise (CI logs, pipes).
 */
export function createProgress(
  stream: NodeJS.WriteStream,
  options: { intervalMs?: number } = {},
): ProgressRenderer {
  const tty = stream.isTTY === true;
  const interval = options.intervalMs ?? (tty ? 100 : 5_000);
  let last = 0;
  let latest: Progress | null = null;
  let drawn = false;
  let shown: Progress | null = null;
  // Fed every update, drawn or not: its origin is the first sample that finished.
  const rate = rateSince();
  let perSecond: number | null = null;
  const draw = (p: Progress) => {
    shown = p;
    if (tty) {
      stream.write(`\r\x1b[2K${line(p, perSecond, Math.max(10, (stream.columns ?? 80) - 70))}`);
      drawn = true;
    } else stream.write(`${line(p, perSecond, 0)}\n`);
  };
  return {
    update(p) {
      latest = p;
      perSecond = rate(p);
      const now = Date.now();
      if (now - last >= interval || p.done + p.errored + (p.others ?? 0) >= p.total) {
        last = now;
        draw(p);
      }
    },
    done() {
      if (tty && drawn) stream.write("\r\x1b[2K");
      else if (!tty && latest && latest !== shown) draw(latest);
    },
  };
}

/**
 * The rate of finished samples per second, measured from the first one that finished: the time
 * before it (loading the eval, opening the store, the first request's connection) is start-up, not
 * throughput, and counting it made a 7 s run's first line say 3.1/s. Null until a second sample
 * finished after the first.
 */
function rateSince(): (p: Progress) => number | null {
  let origin: { count: number; elapsedMs: number } | null = null;
  return (p) => {
    // A distributed run's worker counts the other workers' outcomes too: the run's rate.
    const count = p.executed + (p.others ?? 0);
    if (origin === null) {
      if (count > 0) origin = { count, elapsedMs: p.elapsedMs };
      return null;
    }
    const ms = p.elapsedMs - origin.elapsedMs;
    return count > origin.count && ms > 0 ? ((count - origin.count) / ms) * 1000 : null;
  };
}

function line(p: Progress, rate: number | null, barWidth: number): string {
  // A distributed run's worker counts the other workers' outcomes too: the run's progress.
  const others = p.others ?? 0;
  const finished = p.done + p.errored + others;
  const left = p.total - finished;
  const eta = left === 0 ? formatDuration(0) : rate ? formatDuration((left / rate) * 1000) : "?";
  const fraction = p.total === 0 ? 1 : finished / p.total;
  const bar =
    barWidth > 0 ? `[${"█".repeat(Math.round(fraction * barWidth)).padEnd(barWidth, "·")}] ` : "";
  return (
    `${bar}${formatCount(finished)}/${formatCount(p.total)} ` +
    `· ${rate === null ? "–" : rate.toFixed(1)}/s · ETA ${eta} · errors ${p.errored} · ${formatCost({ costUsd: p.spentNowUsd, unpriced: p.unpricedNow })}` +
    (p.rateLimited
      ? ` · waiting on rate limit (${p.rateLimited.waiting} for ${formatDuration(p.rateLimited.forMs)})`
      : "")
  );
}
