// The postgres group: samples per second on a PostgreSQL store.
import { openPostgresStore } from "../stet.mjs";
import {
  dropSchema,
  perSecondFmt,
  POSTGRES,
  postgresAnswers,
  rate,
  median,
  report,
  spread,
} from "../harness.mjs";

/**
 * Instant samples on PostgreSQL at concurrency 16 and 64, at 64 against issue 34's target (12,000/s
 * on loopback, quiet); skipped when it does not answer.
 */
export default async function postgresGroup() {
  await postgres(16);
  await postgres(64);
}

async function postgres(concurrency) {
  if (!(await postgresAnswers())) {
    console.log(`- PostgreSQL at ${POSTGRES} does not answer; skipping the postgres group`);
    return;
  }
  const figures = await rate(concurrency, async () => {
    const schema = `stet_bench_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    const store = openPostgresStore(POSTGRES, { schema });
    // Connected, and its new schema migrated (130-160 ms), before the clock starts: as
    // openSqliteStore migrates at open for the throughput group. The figure is a run's, not a
    // new store's first use.
    await store.runs.get("r_bench_none");
    return { store, dispose: () => dropSchema(schema) };
  });
  report(
    `10,000 samples, instant solver, PostgreSQL store (loopback), concurrency ${concurrency} (in-process)`,
    `${spread(figures, perSecondFmt)} samples`,
    concurrency === 64 ? "≥ 12,000/s (quiet)" : "—",
    concurrency === 64 ? median(figures) >= 12_000 : true,
  );
}
