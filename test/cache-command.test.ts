import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

const EVAL = `import { defineEval, solvers, scorers } from "stet";
export default defineEval({
  name: "cached",
  dataset: [{ id: "a", input: "a", target: "a" }, { id: "b", input: "b", target: "b" }, { id: "c", input: "c", target: "c" }],
  solver: solvers.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, maxRetries: 0 }),
  scorers: [scorers.exact()],
  cache: true,
});
`;

const { project } = perTest();
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(async () => {
  await mock.close();
});

describe("stet cache", () => {
  it("stats, prune --older-than and clear the store's replies; show gives the size", async () => {
    const p = project({ "eval.mjs": EVAL });
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-cache-command" };
    const cli = (...args: string[]) => runCli(args, { cwd: p.dir, env });
    const run = await cli("run", "eval.mjs", "--json");
    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;

    const stats = await cli("cache", "stats", "--json");
    expect(stats.code, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ entries: 3 });
    expect((await cli("cache", "stats")).stdout).toMatch(/reply cache: 3 replies, [\d.]+ KB/);
    const shown = await cli("show", runId);
    expect(shown.stdout).toMatch(/reply cache: 3 replies/);
    expect(JSON.parse((await cli("show", runId, "--json")).stdout)).toMatchObject({
      cache: { entries: 3 },
    });

    // One reply stored 40 days ago: the default prune (30 days) takes it, and only it.
    const db = new Database(p.db);
    db.prepare(
      "UPDATE reply_cache SET created_at = ? WHERE rowid = (SELECT MIN(rowid) FROM reply_cache)",
    ).run(new Date(Date.now() - 40 * 86_400_000).toISOString());
    db.close();
    const kept = await cli("cache", "prune", "--older-than", "50d", "--json");
    expect(JSON.parse(kept.stdout)).toEqual({ removed: 0 });
    const pruned = await cli("cache", "prune");
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain("pruned 1 reply stored more than 30 day(s) ago");

    const bad = await cli("cache", "prune", "--older-than", "xyz");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--older-than");
    expect(bad.stderr).toContain("expected an age such as 30d or 12h");
    expect(bad.stderr).not.toMatch(/^\s+at /m);
    expect(JSON.parse((await cli("cache", "stats", "--json")).stdout)).toMatchObject({
      entries: 2,
    });

    const cleared = await cli("cache", "clear");
    expect(cleared.stdout).toContain("cleared 2 replies");
    expect((await cli("cache", "stats")).stdout).toContain("reply cache: empty");
    // The run stands: its attempts and journal are not the cache's.
    expect((await cli("show", runId)).code).toBe(0);
  });
});
