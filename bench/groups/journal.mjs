// The journal group: what the step journal costs per step and per agent.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  defineEval,
  openPostgresStore,
  openSqliteStore,
  resolveEval,
  runEval,
  scorers,
} from "../stet.mjs";
import {
  dropSchema,
  fmt,
  median,
  perSecondFmt,
  POSTGRES,
  postgresAnswers,
  report,
  reps,
} from "../harness.mjs";

/** An agent of `steps` ctx.step calls per sample, each taking `stepMs`; journaled unless told. */
function agentEval(n, steps, stepMs, concurrency, journal) {
  const dataset = Array.from({ length: n }, (_, i) => ({ id: `s${i}`, input: `task ${i}` }));
  const ev = defineEval({
    name: "bench-agent",
    dataset,
    solver: async (sample, ctx) => {
      let last = null;
      for (let i = 0; i < steps; i++) {
        last = await ctx.step("tool", { i, last }, async () => {
          if (stepMs > 0) await new Promise((r) => setTimeout(r, stepMs));
          return `${sample.id}:${i}`;
        });
      }
      return last;
    },
    scorers: [scorers.custom("done", () => 1)],
    concurrency,
    journal,
  });
  return resolveEval(ev, { baseDir: process.cwd() });
}

/** Wall times (ms) of `reps` runs of `ev` on fresh stores that `open` makes. */
async function agentWalls(ev, open) {
  const walls = [];
  for (let i = 0; i < reps; i++) {
    const { store, dispose } = await open();
    const t0 = performance.now();
    await runEval({ store, eval: ev });
    walls.push(performance.now() - t0);
    await store.close();
    await dispose();
  }
  return walls;
}

/**
 * The step journal's cost: steps/s of instant steps with and without it (SQLite, PostgreSQL),
 * the time a journaled step adds, and the added wall time of an agent whose steps take 20 ms.
 */
export default async function journalGroup() {
  const sqlite = async () => {
    const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
    const store = openSqliteStore(join(dir, "stet.db"));
    return { store, dispose: () => rmSync(dir, { recursive: true, force: true }) };
  };
  const pgReachable = await postgresAnswers();
  const postgresStore = async () => {
    const schema = `stet_bench_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    return { store: openPostgresStore(POSTGRES, { schema }), dispose: () => dropSchema(schema) };
  };
  const [n, steps, concurrency] = [500, 10, 16];
  const stores = [["SQLite", sqlite], ...(pgReachable ? [["PostgreSQL", postgresStore]] : [])];
  for (const [label, open] of stores) {
    const on = await agentWalls(await agentEval(n, steps, 0, concurrency, true), open);
    const off = await agentWalls(await agentEval(n, steps, 0, concurrency, false), open);
    const stepsPerSec = (ws) => (n * steps) / (median(ws) / 1000);
    report(
      `${n} samples × ${steps} instant ctx.step, ${label}, concurrency ${concurrency}: journaled`,
      `${perSecondFmt(stepsPerSec(on))} steps (unjournaled ${perSecondFmt(stepsPerSec(off))})`,
      "—",
      true,
    );
    // A worker runs its steps one after another: n × steps / concurrency of them in sequence.
    const added = (median(on) - median(off)) / ((n * steps) / concurrency);
    report(
      `time a journaled step adds against a 0 ms step, ${label}`,
      `${added.toFixed(2)} ms per step`,
      "—",
      true,
    );
  }
  if (!pgReachable)
    console.log(`- PostgreSQL at ${POSTGRES} does not answer; journal figures on SQLite only`);
  const [an, asteps] = [96, 8];
  const on = await agentWalls(await agentEval(an, asteps, 20, concurrency, true), sqlite);
  const off = await agentWalls(await agentEval(an, asteps, 20, concurrency, false), sqlite);
  const overhead = median(on) / median(off) - 1;
  report(
    `${an} samples × ${asteps} steps of 20 ms, SQLite, concurrency ${concurrency}: wall added by the journal`,
    `${(overhead * 100).toFixed(1)} % (${fmt(median(on))} against ${fmt(median(off))})`,
    "≤ 5 %",
    overhead <= 0.05,
  );
}
