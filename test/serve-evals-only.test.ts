import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startCli } from "./helpers/cli.js";
import { evalProject, rawAttempts, rawRun } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";
import { collectSse } from "./helpers/sse.js";
import { until } from "./helpers/wait.js";

// The server executes only what its --evals directory holds: a run started elsewhere is not
// resumed through the API, and the file it came from is never imported by the server.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** An eval module that notes every process importing it in $MARKER, as `<label> <pid>`. */
function evalModule(name: string, label: string): string {
  return `import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
appendFileSync(process.env.MARKER, ${JSON.stringify(label)} + " " + process.pid + "\\n");
export default defineEval({
  name: ${JSON.stringify(name)},
  dataset: Array.from({ length: 6 }, (_, i) => ({ id: "s" + i, input: "s" + i, target: "s" + i })),
  solver: async ({ input }) => { await new Promise((r) => setTimeout(r, 150)); return input; },
  scorers: [scorers.exact()],
  concurrency: 1,
});
`;
}

/** Starts `file`, interrupts it with SIGINT after its first commit: an interrupted run. */
async function interruptedRun(dir: string, file: string, db: string, env: NodeJS.ProcessEnv) {
  const cli = startCli(["run", file, "--store", db], { cwd: dir, env });
  const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
  await until(
    () => existsSync(db) && rawAttempts(db).some((a) => a.run_id === runId),
    "a committed attempt",
  );
  cli.child.kill("SIGINT");
  expect((await cli.done).code).toBe(130);
  return runId;
}

describe("stet serve --evals", () => {
  it("resumes only runs of its own evals and never imports a file from elsewhere", async () => {
    const files = {
      "evals/inside.mjs": evalModule("inside", "inside"),
      // Same name as the registered eval, other code: the name alone must not let it in.
      "elsewhere/impostor.mjs": evalModule("inside", "impostor"),
      "elsewhere/other.mjs": evalModule("other", "other"),
    };
    const p = evalProject({});
    cleanups.push(p.cleanup);
    for (const folder of ["evals", "elsewhere"]) mkdirSync(join(p.dir, folder));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(p.dir, name), text);
    const marker = join(p.dir, "imports.log");
    const env = { MARKER: marker };
    const db = join(p.dir, "stet.db");

    const runs = {
      inside: await interruptedRun(p.dir, "evals/inside.mjs", db, env),
      impostor: await interruptedRun(p.dir, "elsewhere/impostor.mjs", db, env),
      other: await interruptedRun(p.dir, "elsewhere/other.mjs", db, env),
    };
    const server = await startServe(["--store", db, "--evals", join(p.dir, "evals")], env);
    cleanups.push(() => void server.proc.child.kill("SIGKILL"));

    for (const run of [runs.impostor, runs.other]) {
      const refused = await server.post(`/api/runs/${run}/resume`);
      expect(refused.status).toBe(403);
      const body = (await refused.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("eval_not_allowed");
      expect(body.error.message).toContain(join(p.dir, "elsewhere"));
      expect(body.error.message).toContain(`stet resume ${run}`);
      expect(rawRun(db, run)).toMatchObject({ status: "interrupted" });
    }
    const before = rawAttempts(db).filter((a) => a.run_id === runs.impostor).length;

    // A run of the registered eval is resumed as usual.
    const events = await collectSse(await server.post(`/api/runs/${runs.inside}/resume`));
    expect(events.at(-1)?.event).toBe("completed");
    await until(() => rawRun(db, runs.inside)?.status === "completed", "the resumed run");

    const imports = readFileSync(marker, "utf8").trim().split("\n");
    expect(imports).toContain(`inside ${server.pid}`);
    expect(imports.filter((line) => line.endsWith(` ${server.pid}`))).toEqual([
      `inside ${server.pid}`,
    ]);
    expect(rawAttempts(db).filter((a) => a.run_id === runs.impostor)).toHaveLength(before);
  });
});
