import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { shellQuote } from "../../src/core/shell-quote.js";
import { runCli } from "./cli.js";
import { dumpDb } from "./db-dump.js";
import { perTest } from "./eval-project.js";
import { dumpPg } from "./pg-dump.js";
import { testSchemaPool } from "./postgres.js";
import { solverCalls } from "./wait.js";

/** q0 … q5, target "answer N". */
export const SIX = Array.from({ length: 6 }, (_, i) =>
  JSON.stringify({ id: `q${i}`, input: `question ${i}`, target: `answer ${i}` }),
).join("\n");

/**
 * An eval file whose solver answers "the answer N" (so `exact` scores 0 and `includes` 1),
 * appends each call to calls.log, throws for samples numbered DOWN_FROM and up (an environment
 * variable: the solver's source, its identity, stays the same) and hangs while HANG is set.
 * `scorers` is the source of its scorer list.
 */
export function identityEval(scorers: string, options: { name?: string; solver?: string } = {}) {
  const answer = options.solver ?? `"the " + sample.target`;
  return `import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: ${JSON.stringify(options.name ?? "scored")},
  dataset: "./data.jsonl",
  solver: async function solve(sample) {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "\\n");
    if (process.env.HANG) await new Promise(() => {});
    if (Number(sample.id.slice(1)) >= Number(process.env.DOWN_FROM ?? 99)) throw new Error("endpoint down");
    return ${answer};
  },
  scorers: ${scorers},
  concurrency: 2,
});
`;
}

/** The stores the identity tests run on, by name. */
export const STORE_KINDS = ["SQLite", "PostgreSQL"] as const;

/**
 * A project with `data.jsonl` (six samples) and `eval.mjs` (`identityEval(scorers)`), on a store
 * of `kind`: `stet(env, ...args)` runs the CLI there (with `--store` for PostgreSQL), `dump()`
 * reads every row of the store, `storeFlag` is what a printed command adds for the store.
 */
export function identityProjects() {
  const { project } = perTest();
  return (kind: (typeof STORE_KINDS)[number], files: Record<string, string>) => {
    const p = project({ "data.jsonl": SIX, ...files });
    const pg = kind === "PostgreSQL" ? testSchemaPool() : undefined;
    const args = pg ? ["--store", pg.url] : [];
    const stet = (env: NodeJS.ProcessEnv, ...argv: string[]) =>
      runCli([...argv, ...args], { cwd: p.dir, env });
    return {
      dir: p.dir,
      stet,
      dump: () => (pg ? dumpPg(pg.db) : Promise.resolve(dumpDb(p.db))),
      storeFlag: pg ? ` --store ${shellQuote(pg.url)}` : "",
      write: (name: string, text: string) => writeFileSync(join(p.dir, name), text),
      /** The solver calls so far, sorted, and forgotten. */
      calls: () => {
        const calls = solverCalls(p.dir).sort();
        writeFileSync(join(p.dir, "calls.log"), "");
        return calls;
      },
    };
  };
}
