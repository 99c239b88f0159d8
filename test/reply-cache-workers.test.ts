import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { runCli, startCli, type CliProcess } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";
import { until } from "./helpers/wait.js";

// The reply cache lives in the store: on PostgreSQL every process of a distributed run (the
// creator and its `stet worker`s, on any machine) is served the replies any other stored.

const N = 20;

/** N chat calls behind a gate: no call is made until the file $GATE exists (when set). */
function evalText(name: string): string {
  return `import { existsSync } from "node:fs";
import { defineEval, solvers, scorers } from "stet";
const chat = solvers.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, maxRetries: 0 });
export default defineEval({
  name: "${name}",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "question " + i })),
  solver: async (sample, ctx) => {
    while (process.env.GATE && !existsSync(process.env.GATE)) await new Promise((r) => setTimeout(r, 20));
    return chat(sample, ctx);
  },
  scorers: [scorers.exact()],
  cache: true,
});
`;
}

describe.skipIf(SKIP_POSTGRES)("the reply cache on PostgreSQL", () => {
  it("serves every worker of a distributed run the replies an earlier run stored", async () => {
    const mock = await startMockOpenAI();
    const project = evalProject({ "a.mjs": evalText("first"), "b.mjs": evalText("second") });
    const { url, db } = testSchemaPool();
    const processes: CliProcess[] = [];
    onTestFinished(async () => {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL");
      await Promise.all(processes.map((p) => p.done));
      await mock.close();
      project.cleanup();
    });
    const gate = join(project.dir, "gate");
    const env = { STET_STORE: url, MOCK_URL: mock.url, OPENAI_API_KEY: "sk-workers", GATE: gate };
    const stet = (args: string[]) => {
      const p = startCli(args, { cwd: project.dir, env });
      processes.push(p);
      return p;
    };
    // The first eval, by one process, stores every reply.
    const first = await runCli(["run", "a.mjs"], { cwd: project.dir, env: { ...env, GATE: "" } });
    expect(first.code, first.stderr).toBe(0);
    expect(mock.requests).toHaveLength(N);

    // The second, by three processes: each holds leases before any solver call is let through.
    const run = stet(["run", "b.mjs", "--distributed", "--concurrency", "2"]);
    const runId = (await run.waitFor(/^run (r_\w+) · second · /m))[1]!;
    const workers = [0, 1].map(() => stet(["worker", "--run", runId, "--concurrency", "2"]));
    const holders = async () =>
      (
        await db.query<{ n: number }>(
          `SELECT COUNT(DISTINCT token)::int AS n FROM leases
            WHERE run_id = $1 AND token IS NOT NULL AND done = 0`,
          [runId],
        )
      ).rows[0]?.n ?? 0;
    await until(async () => (await holders()) === 3, "three processes holding leases");
    writeFileSync(gate, "");
    const results = await Promise.all([run, ...workers].map((p) => p.done));
    expect(
      results.map((r) => r.code),
      results.map((r) => r.stderr).join("\n---\n"),
    ).toEqual([0, 0, 0]);
    // Not one request more, and every process was served hits.
    expect(mock.requests).toHaveLength(N);
    const done = await db.query<{ keys_done: number }>(
      `SELECT keys_done FROM workers WHERE run_id = $1`,
      [runId],
    );
    expect(done.rows).toHaveLength(3);
    for (const row of done.rows) expect(row.keys_done).toBeGreaterThan(0);
    const spent = await db.query<{ tokens: number }>(
      `SELECT SUM(input_tokens)::int AS tokens FROM attempts WHERE run_id = $1`,
      [runId],
    );
    expect(spent.rows[0]?.tokens).toBe(N * 10);
  });
});
