// The throughput group: samples per second on durable SQLite.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../stet.mjs";
import { median, perSecondFmt, rate, report, spread } from "../harness.mjs";

/**
 * Instant samples on SQLite at concurrency 16 and 64; at 64, against issue 34's target (45,000/s on
 * this 2-core machine, quiet).
 */
export default async function throughputGroup() {
  await throughput(16);
  await throughput(64);
}

async function throughput(concurrency) {
  const figures = await rate(concurrency, async () => {
    const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
    const store = openSqliteStore(join(dir, "stet.db"));
    return { store, dispose: () => rmSync(dir, { recursive: true, force: true }) };
  });
  report(
    `10,000 samples, instant solver, durable SQLite, concurrency ${concurrency} (in-process)`,
    `${spread(figures, perSecondFmt)} samples`,
    concurrency === 64 ? "≥ 45,000/s (quiet)" : "≥ 10,000/s",
    median(figures) >= (concurrency === 64 ? 45_000 : 10_000),
  );
}
