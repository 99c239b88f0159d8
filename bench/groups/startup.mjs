// The startup group: how long the CLI takes to start and to list a large store.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { runEval, openSqliteStore } from "../stet.mjs";
import { cli, fmt, instant, median, project, report, spread, walls } from "../harness.mjs";

/** A 1-sample eval with an instant solver: what start-up costs, and little else. */
const oneEval = (types) => `
import { defineEval, scorers } from "stet";
${types ? "type Row = { id: string; input: string; target: string };\nconst rows: Row[] =" : "const rows ="} [{ id: "a", input: "x", target: "x" }];
export default defineEval({
  name: "one",
  dataset: rows,
  solver: (sample${types ? ": { input: unknown }" : ""}) => String(sample.input),
  scorers: [scorers.exact()],
});
`;

/**
 * Start-up as a user sees it: the CLI run from a project that depends on stet, on a new store
 * each time, for a 1-sample eval in TypeScript (cold: no transpile cache; warm: cached) and in
 * plain JavaScript; and `stet list` over a store of 1,000 runs.
 */
export default async function startup() {
  const dir = project({ "one.eval.ts": oneEval(true), "one.eval.mjs": oneEval(false) });
  const cache = join(dir, "node_modules/.cache/stet");
  let stores = 0;
  const runOf = (file) => () => ["run", file, "--store", join(dir, `s${stores++}.db`)];
  const budget = (name, figures, limitMs) =>
    report(name, spread(figures), `≤ ${fmt(limitMs)}`, median(figures) <= limitMs);
  try {
    report("`stet --version`", spread(await walls(dir, () => ["--version"])), "—", true);
    const clear = () => rmSync(cache, { recursive: true, force: true });
    budget(
      "`stet run` of a 1-sample .ts eval, cold cache",
      await walls(dir, runOf("one.eval.ts"), clear),
      350,
    );
    await cli(runOf("one.eval.ts")(), dir);
    budget(
      "`stet run` of a 1-sample .ts eval, warm cache",
      await walls(dir, runOf("one.eval.ts")),
      250,
    );
    budget("`stet run` of a 1-sample .mjs eval", await walls(dir, runOf("one.eval.mjs")), 200);

    const db = join(dir, "list.db");
    const store = openSqliteStore(db);
    const ev = await instant(1, 1);
    for (let i = 0; i < 1_000; i++) await runEval({ store, eval: ev });
    await store.close();
    budget(
      "`stet list` on a store of 1,000 runs",
      await walls(dir, () => ["list", "--store", db]),
      200,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
