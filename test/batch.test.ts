import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { runCli, startCli } from "./helpers/cli.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";
import { perTest } from "./helpers/eval-project.js";
import { batchEval } from "./helpers/batch-eval.js";
import {
  startMockBatch,
  type MockBatchOptions,
  type MockBatchServer,
} from "./helpers/mock-batch.js";

// Batch execution through the real CLI against a local server of the providers' batch protocols:
// every key's call goes in one batch, its results are committed as ordinary attempts, priced at
// the batch tier.

const { project } = perTest();
const mocks: MockBatchServer[] = [];
afterEach(async () => {
  while (mocks.length) await mocks.pop()!.close();
});

async function mockBatch(options: MockBatchOptions = {}) {
  const mock = await startMockBatch(options);
  mocks.push(mock);
  return mock;
}

const envOf = (mock: MockBatchServer) => ({
  OPENAI_BASE_URL: mock.url,
  OPENAI_API_KEY: "sk-batch-test-0123456789",
  ANTHROPIC_BASE_URL: mock.anthropicURL,
  ANTHROPIC_API_KEY: "sk-ant-batch-test-0123456789",
});

interface Row {
  sample_id: string;
  status: string;
  output: string;
  cost_usd: number | null;
  input_tokens: number;
  output_tokens: number;
}

function attempts(db: string): Row[] {
  const raw = new Database(db, { readonly: true });
  try {
    return raw
      .prepare(
        "SELECT sample_id, status, output, cost_usd, input_tokens, output_tokens FROM attempts ORDER BY sample_id, attempt",
      )
      .all() as Row[];
  } finally {
    raw.close();
  }
}

describe("stet run --batch", () => {
  it("sends 500 samples in one OpenAI batch, commits them as attempts priced at the batch tier, and exports what a direct run does", async () => {
    const mock = await mockBatch({ delayMs: 300 });
    const { dir, db } = project({ "eval.mjs": batchEval(500, "batch: { pollSeconds: 0.1 },") });
    const result = await runCli(["run", "eval.mjs", "--json"], { cwd: dir, env: envOf(mock) });
    expect(result.code, result.stderr).toBe(0);
    expect(mock.batches).toHaveLength(1);
    expect(mock.batches[0]!.items).toHaveLength(500);
    expect(Object.values(mock.billed()).every((n) => n === 1)).toBe(true);
    expect(Object.keys(mock.billed())).toHaveLength(500);
    const rows = attempts(db);
    expect(rows).toHaveLength(500);
    // gpt-4o-mini: $0.15 in, $0.60 out per 1M; the batch tier is half.
    const perCall = (10 * 0.075 + 5 * 0.3) / 1e6;
    for (const row of rows) {
      expect(row).toMatchObject({ status: "scored", input_tokens: 10, output_tokens: 5 });
      expect(row.cost_usd).toBeCloseTo(perCall, 15);
      expect(JSON.parse(row.output)).toBe(`answer: question ${row.sample_id.slice(1)}`);
    }
    const report = JSON.parse(result.stdout) as { runId: string; status: string };
    expect(report.status).toBe("completed");

    // The same eval without --batch, one request per sample: the same outputs and scores.
    const direct = await startMockOpenAI({ reply: ({ key }) => `answer: ${key}` });
    try {
      const plain = project({ "eval.mjs": batchEval(500) });
      const env = { ...envOf(mock), OPENAI_BASE_URL: direct.url };
      const again = await runCli(["run", "eval.mjs", "--json"], { cwd: plain.dir, env });
      expect(again.code, again.stderr).toBe(0);
      expect(direct.requests).toHaveLength(500);
      const exported = async (dir: string, runId: string) => {
        const out = await runCli(["export", runId, "--format", "jsonl"], { cwd: dir });
        expect(out.code, out.stderr).toBe(0);
        return out.stdout
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line) as { sampleId: string; output: unknown; scores: unknown })
          .map(({ sampleId, output, scores }) => ({ sampleId, output, scores }));
      };
      const plainId = (JSON.parse(again.stdout) as { runId: string }).runId;
      const batched = await exported(dir, report.runId);
      expect(batched).toHaveLength(500);
      expect(batched[0]).toMatchObject({ output: expect.stringMatching(/^answer: question \d+$/) });
      expect(batched).toEqual(await exported(plain.dir, plainId));
    } finally {
      await direct.close();
    }
  }, 120_000);

  it("refuses an agent with a clear message, before anything is submitted", async () => {
    const mock = await mockBatch();
    const text = `import { defineEval, solvers, scorers } from "stet";
export default defineEval({
  name: "agent",
  dataset: [{ id: "a", input: "x", target: "y" }],
  solver: solvers.agent({ model: "gpt-4o-mini", tools: { noop: { description: "nothing", parameters: { type: "object", properties: {} }, execute: () => 1 } } }),
  scorers: [scorers.exact()],
});
`;
    const { dir } = project({ "eval.mjs": text });
    const result = await runCli(["run", "eval.mjs", "--batch"], { cwd: dir, env: envOf(mock) });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--batch needs a solver that makes single model calls/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(mock.log).toEqual([]);
  });

  it("submits the 20 keys that failed and the 30 that expired inside a batch again, once, and never the others", async () => {
    const index = (key: string) => Number(key.split(" ")[1]);
    const mock = await mockBatch({
      fail: (key, n) => n === 1 && index(key) < 20,
      expire: (key, n) => n === 1 && index(key) >= 20 && index(key) < 50,
    });
    const { dir, db } = project({
      "eval.mjs": batchEval(100, "batch: { pollSeconds: 0.05 }, retries: 1,"),
    });
    const result = await runCli(["run", "eval.mjs", "--json"], { cwd: dir, env: envOf(mock) });
    expect(result.code, result.stderr).toBe(0);
    expect(mock.batches).toHaveLength(2);
    expect(mock.batches[1]!.items.map((i) => index(i.key)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i),
    );
    const submitted = mock.submitted();
    for (let i = 0; i < 100; i++) expect(submitted[`question ${i}`]).toBe(i < 50 ? 2 : 1);
    // The failed requests were billed (processed) once each and once more when they succeeded;
    // the expired ones only when they ran.
    const billed = mock.billed();
    for (let i = 0; i < 100; i++) expect(billed[`question ${i}`]).toBe(i < 20 ? 2 : 1);
    const rows = attempts(db);
    // The 20 errors are attempts of their keys (retried as errors are); expiry is no attempt.
    expect(rows.filter((r) => r.status === "error")).toHaveLength(20);
    expect(rows.filter((r) => r.status === "scored")).toHaveLength(100);
  }, 120_000);

  it("--max-cost below the eval's batch price: submits no batch that could pass the cap, exits 6, and a resume with a higher cap finishes without re-buying", async () => {
    const mock = await mockBatch();
    const { dir, db } = project({ "eval.mjs": batchEval(40, "batch: { pollSeconds: 0.05 },") });
    const perCall = (10 * 0.075 + 5 * 0.3) / 1e6;
    const cap = 10.5 * perCall;
    const env = envOf(mock);
    const run = await runCli(
      ["run", "eval.mjs", "--run-id", "r_batch_cap", "--max-cost", String(cap)],
      { cwd: dir, env },
    );
    expect(run.code, run.stderr).toBe(6);
    const bought = Object.values(mock.billed()).reduce((a, b) => a + b, 0);
    expect(bought).toBeGreaterThan(0);
    expect(bought * perCall).toBeLessThanOrEqual(cap);
    expect(attempts(db)).toHaveLength(bought);

    const resumed = await runCli(["resume", "r_batch_cap", "--max-cost", "1"], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const billed = mock.billed();
    expect(Object.keys(billed)).toHaveLength(40);
    expect(Object.values(billed).every((n) => n === 1)).toBe(true);
    expect(attempts(db).filter((r) => r.status === "scored")).toHaveLength(40);
  }, 120_000);

  it("stet cancel on a running batched run cancels its open batch at the server, and nothing more is billed", async () => {
    const mock = await mockBatch({ delayMs: 600_000 });
    const { dir, db } = project({ "eval.mjs": batchEval(10, "batch: { pollSeconds: 0.05 },") });
    const env = envOf(mock);
    const child = startCli(["run", "eval.mjs", "--run-id", "r_batch_cancel"], { cwd: dir, env });
    await child.waitFor(/run r_batch_cancel/);
    while (!mock.log.some((line) => line.startsWith("GET /v1/batches/"))) await sleep(50);
    const cancel = await runCli(["cancel", "r_batch_cancel"], { cwd: dir, env });
    expect(cancel.code, cancel.stderr).toBe(0);
    const ended = await child.done;
    expect(ended.signal).toBeNull();
    const id = mock.batches[0]!.id;
    expect(mock.log).toContain(`POST /v1/batches/${id}/cancel`);
    expect(mock.batches[0]!.status).toBe("cancelled");
    expect(mock.batches).toHaveLength(1);
    expect(mock.billed()).toEqual({});
    // Nothing ran: no key has a scored attempt.
    expect(attempts(db).filter((r) => r.status === "scored")).toEqual([]);
  }, 60_000);
});
