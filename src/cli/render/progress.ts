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
  const draw = (p: Progress) => {
    shown = p;
    if (tty) {
      stream.write(`\r\x1b[2K${line(p, Math.max(10, (stream.columns ?? 80) - 70))}`);
      drawn = true;
    } else stream.write(`${line(p, 0)}\n`);
  };
  return {
    update(p) {
      latest = p;
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

function line(p: Progress, barWidth: number): string {
  // A distributed run's worker counts the other workers' outcomes too: the run's progress.
  const others = p.others ?? 0;
  const finished = p.done + p.errored + others;
  const rate = p.elapsedMs > 0 ? ((p.executed + others) / p.elapsedMs) * 1000 : 0;
  const left = p.total - finished;
  const eta = rate > 0 ? formatDuration((left / rate) * 1000) : "?";
  const fraction = p.total === 0 ? 1 : finished / p.total;
  const bar =
    barWidth > 0 ? `[${"█".repeat(Math.round(fraction * barWidth)).padEnd(barWidth, "·")}] ` : "";
  return (
    `${bar}${formatCount(finished)}/${formatCount(p.total)} ` +
    `· ${rate.toFixed(1)}/s · ETA ${eta} · errors ${p.errored} · ${formatCost({ costUsd: p.spentNowUsd, unpriced: p.unpricedNow })}`
  );
}
