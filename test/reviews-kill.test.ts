import { afterEach, describe, expect, it } from "vitest";
import type { ReviewsView } from "../src/api/contract.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli } from "./helpers/cli.js";
import { dumpDb } from "./helpers/db-dump.js";
import { evalProject } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const EVAL = `import { defineEval } from "stet";
export default defineEval({
  name: "echo",
  dataset: Array.from({ length: 20 }, (_, i) => ({ id: "s" + String(i).padStart(2, "0"), input: String(i), target: String(i) })),
  solver: (sample) => String(sample.input),
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

describe("killing the server mid-review", () => {
  it("loses at most the review in flight; every acknowledged one stands, attempts untouched", async () => {
    const p = evalProject({ "echo.mjs": EVAL });
    cleanups.push(p.cleanup);
    const run = await runCli(["run", "echo.mjs", "--json"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
    const paid = () => {
      const dump = JSON.parse(dumpDb(p.db)) as Record<string, string[]>;
      return JSON.stringify({ attempts: dump.attempts, scorings: dump.scorings });
    };
    const before = paid();
    const server = await startServe(["--store", p.db], { STET_REVIEWER: "ada" });
    cleanups.push(() => server.proc.child.kill("SIGKILL"));

    const acknowledged: string[] = [];
    for (let i = 0; i < 10; i++) {
      const sampleId = `s${String(i).padStart(2, "0")}`;
      const res = await server.post(`/api/runs/${runId}/reviews`, { sampleId, verdict: "pass" });
      expect(res.status).toBe(201);
      acknowledged.push(sampleId);
    }
    // The eleventh is sent and the server killed before its answer is read.
    const inFlight = server
      .post(`/api/runs/${runId}/reviews`, { sampleId: "s10", verdict: "fail" })
      .then((r) => r.status)
      .catch(() => "no answer");
    server.proc.child.kill("SIGKILL");
    await server.proc.done;
    const answer = await inFlight;

    const store = openSqliteStore(p.db);
    cleanups.push(() => store.close());
    const stored = (await store.reviews.list(runId)).map((r) => r.sampleId);
    expect(stored.slice(0, 10)).toEqual(acknowledged);
    // The one in flight is there whole or not at all; acknowledged, it must be there.
    expect(stored.length === 10 || (stored.length === 11 && stored[10] === "s10")).toBe(true);
    if (answer === 201) expect(stored).toHaveLength(11);
    expect(paid()).toBe(before);

    // A new server serves them all and takes reviews again.
    const again = await startServe(["--store", p.db], { STET_REVIEWER: "ada" });
    cleanups.push(() => again.proc.child.kill("SIGKILL"));
    const res = await again.post(`/api/runs/${runId}/reviews`, { sampleId: "s11", value: 0.5 });
    expect(res.status).toBe(201);
    const listed = (await (await again.fetch(`/api/runs/${runId}/reviews`)).json()) as ReviewsView;
    expect(listed.reviews.map((r) => r.sampleId)).toEqual([...stored, "s11"]);
  });
});
