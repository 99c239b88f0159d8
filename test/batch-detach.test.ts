import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { batchEval } from "./helpers/batch-eval.js";
import { startServe } from "./helpers/serve.js";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";
import { startMockBatch, type MockBatchServer } from "./helpers/mock-batch.js";

// `stet run --batch --detach` against a local server of the providers' batch protocols: the run
// submits its batches and exits; it is listed as waiting with no owner; `stet resume` collects,
// `stet cancel` cancels the open batches at the server, and a server's boot recovery leaves them.

const { project } = perTest();
const mocks: MockBatchServer[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  while (cleanups.length) cleanups.pop()!();
  while (mocks.length) await mocks.pop()!.close();
});

async function mockBatch(delayMs: number) {
  const mock = await startMockBatch({ delayMs });
  mocks.push(mock);
  return mock;
}

const envOf = (mock: MockBatchServer) => ({
  OPENAI_BASE_URL: mock.url,
  OPENAI_API_KEY: "sk-batch-detach-0123456789",
});

/** The batches' creations the server saw (OpenAI's POST /v1/batches). */
const creations = (mock: MockBatchServer) =>
  mock.log.filter((line) => line === "POST /v1/batches").length;

function statuses(db: string, runId: string): Record<string, number> {
  const raw = new Database(db, { readonly: true });
  try {
    const rows = raw
      .prepare(
        "SELECT status, COUNT(*) AS n FROM attempts_now WHERE run_id = ? GROUP BY status ORDER BY status",
      )
      .all(runId) as { status: string; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    raw.close();
  }
}

interface ListedRow {
  id: string;
  status: string;
  batches?: {
    waiting: number;
    total: number;
    waitingRequests: number;
    batches: { batchId: string | null; status: string; requests: number; ageMs: number }[];
  };
}

/** Starts a detached run of `n` samples (`extra`: more of the eval) and checks it left at once. */
async function detached(mock: MockBatchServer, runId: string, n: number, extra = "") {
  const eval_ = batchEval(n, `batch: { pollSeconds: 0.05${extra} },`);
  const { dir, db } = project({ "eval.mjs": eval_ });
  const env = envOf(mock);
  const run = await runCli(["run", "eval.mjs", "--run-id", runId, "--detach"], { cwd: dir, env });
  expect(run.code, run.stderr + run.stdout).toBe(0);
  expect(run.stdout + run.stderr).toContain(`run ${runId}`);
  expect(run.stderr).toMatch(/detached: waiting on \d+ provider batch/);
  expect(run.stderr).toContain(`stet resume ${runId}`);
  expect(statuses(db, runId)).toEqual({});
  return { dir, db, env };
}

describe("stet run --batch --detach", () => {
  it("submits the batch and exits 0; list shows the run waiting with no owner; resume collects it without a new batch", async () => {
    const mock = await mockBatch(600_000);
    const { dir, db, env } = await detached(mock, "r_detach", 20);
    expect(creations(mock)).toBe(1);
    expect(mock.batches).toHaveLength(1);
    expect(mock.batches[0]!.items).toHaveLength(20);
    expect(mock.batches[0]!.status).toBe("running");

    const list = await runCli(["list"], { cwd: dir });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/r_detach .*interrupted, waiting on 1 batch \(20 requests, 0m\)/);
    const json = await runCli(["list", "--json"], { cwd: dir });
    const [row] = JSON.parse(json.stdout) as ListedRow[];
    expect(row).toMatchObject({
      id: "r_detach",
      status: "interrupted",
      batches: {
        waiting: 1,
        total: 1,
        waitingRequests: 20,
        batches: [{ batchId: mock.batches[0]!.id, status: "submitted", requests: 20 }],
      },
    });
    expect(row!.batches!.batches[0]!.ageMs).toBeGreaterThanOrEqual(0);

    // The provider finishes the batch; the resume adopts it: no new batch, nothing billed twice.
    mock.batches[0]!.endsAt = 0;
    const resumed = await runCli(["resume", "r_detach"], { cwd: dir, env });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(creations(mock)).toBe(1);
    expect(statuses(db, "r_detach")).toEqual({ scored: 20 });
    const billed = mock.billed();
    expect(Object.keys(billed)).toHaveLength(20);
    expect(Object.values(billed).every((n) => n === 1)).toBe(true);
    const after = JSON.parse(
      (await runCli(["list", "--json"], { cwd: dir })).stdout,
    ) as ListedRow[];
    expect(after[0]).toMatchObject({ status: "completed", batches: { waiting: 0, total: 1 } });
  }, 60_000);

  it("refuses --detach without batches, before anything runs", async () => {
    const mock = await mockBatch(0);
    const { dir } = project({ "eval.mjs": batchEval(3) });
    const run = await runCli(["run", "eval.mjs", "--detach"], { cwd: dir, env: envOf(mock) });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--detach leaves a run's provider batches to a later resume/);
    expect(mock.log).toEqual([]);
  });

  it("stet cancel on the waiting run cancels its open batch at the server and keeps what finished", async () => {
    const mock = await mockBatch(600_000);
    // Two batches of 5: the first finishes at the provider, the second is still running.
    const { dir, db, env } = await detached(mock, "r_detach_cancel", 10, ", maxRequests: 5");
    expect(creations(mock)).toBe(2);
    const [first, second] = mock.batches;
    first!.endsAt = 0;

    const cancel = await runCli(["cancel", "r_detach_cancel"], { cwd: dir, env });
    expect(cancel.code, cancel.stderr + cancel.stdout).toBe(0);
    expect(cancel.stdout).toMatch(/1 provider batch cancelled, 1 ended already/);
    expect(mock.log).toContain(`POST /v1/batches/${second!.id}/cancel`);
    expect(mock.log).not.toContain(`POST /v1/batches/${first!.id}/cancel`);
    expect(second!.status).toBe("cancelled");
    const listed = JSON.parse(
      (await runCli(["list", "--json"], { cwd: dir })).stdout,
    ) as ListedRow[];
    expect(listed[0]!.batches).toMatchObject({ waiting: 1, total: 2, waitingRequests: 5 });

    // The resume collects the finished batch (bought once, no new batch for its keys); the
    // cancelled requests never ran: they go in one new batch, which the provider then finishes.
    const finish = setInterval(() => mock.batches.slice(2).forEach((b) => (b.endsAt = 0)), 20);
    cleanups.push(() => clearInterval(finish));
    const resumed = await runCli(["resume", "r_detach_cancel"], { cwd: dir, env });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(statuses(db, "r_detach_cancel")).toEqual({ scored: 10 });
    expect(creations(mock)).toBe(3);
    const keys = (b: (typeof mock.batches)[number]) => b.items.map((i) => i.key).sort();
    expect(keys(mock.batches[2]!)).toEqual(keys(second!));
    const billed = mock.billed();
    expect(Object.keys(billed)).toHaveLength(10);
    expect(Object.values(billed).every((n) => n === 1)).toBe(true);
  }, 60_000);

  it("stet cancel on a run whose owner was killed while its batch ran: the run is interrupted and the batch cancelled at the server", async () => {
    const mock = await mockBatch(600_000);
    const { dir } = project({ "eval.mjs": batchEval(6, "batch: { pollSeconds: 0.05 },") });
    const env = envOf(mock);
    const child = startCli(["run", "eval.mjs", "--run-id", "r_killed_batch"], { cwd: dir, env });
    while (!mock.log.some((line) => line.startsWith("GET /v1/batches/"))) await sleep(50);
    child.child.kill("SIGKILL");
    expect((await child.done).signal).toBe("SIGKILL");
    const cancel = await runCli(["cancel", "r_killed_batch", "--json"], { cwd: dir, env });
    expect(cancel.code, cancel.stderr + cancel.stdout).toBe(0);
    expect(JSON.parse(cancel.stdout.trim().split("\n")[0]!)).toMatchObject({
      outcome: "interrupted",
      status: "interrupted",
      batches: { cancelled: 1, ended: 0, left: [] },
    });
    expect(mock.log).toContain(`POST /v1/batches/${mock.batches[0]!.id}/cancel`);
    expect(creations(mock)).toBe(1);
  }, 60_000);

  it("Anthropic's Message Batches: detach, then stet cancel cancels the open batch at the server", async () => {
    const mock = await mockBatch(600_000);
    const model = "anthropic:claude-haiku-4-5";
    const { dir } = project({ "eval.mjs": batchEval(6, "batch: { pollSeconds: 0.05 },", model) });
    const env = {
      ANTHROPIC_BASE_URL: mock.anthropicURL,
      ANTHROPIC_API_KEY: "sk-ant-detach-0123456789",
    };
    const run = await runCli(["run", "eval.mjs", "--run-id", "r_detach_ant", "--detach"], {
      cwd: dir,
      env,
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(mock.log.filter((l) => l === "POST /v1/messages/batches")).toHaveLength(1);
    const [batch] = mock.batches;
    expect(batch).toMatchObject({ protocol: "anthropic", status: "running" });
    const cancel = await runCli(["cancel", "r_detach_ant", "--json"], { cwd: dir, env });
    expect(cancel.code, cancel.stderr + cancel.stdout).toBe(0);
    expect(JSON.parse(cancel.stdout.trim().split("\n")[0]!)).toMatchObject({
      outcome: "batches-cancelled",
      batches: { cancelled: 1, ended: 0, left: [] },
    });
    expect(mock.log).toContain(`POST /v1/messages/batches/${batch!.id}/cancel`);
    expect(batch!.status).toBe("cancelled");
    const shown = await runCli(["show", "r_detach_ant"], { cwd: dir });
    expect(shown.stdout).toMatch(/batches {2}waiting on 0 of 1/);
  }, 60_000);

  it("a server booting on the store never submits a waiting run's batches again (detached, or its owner killed); its API and UI show them", async () => {
    const mock = await mockBatch(600_000);
    const { dir, db, env } = await detached(mock, "r_detach_serve", 8);
    expect(creations(mock)).toBe(1);
    // A second batched run of the store, SIGKILLed while its batch ran: still marked running.
    const killed = startCli(["run", "eval.mjs", "--run-id", "r_killed_serve"], { cwd: dir, env });
    while (creations(mock) < 2 || !mock.log.includes(`GET /v1/batches/${mock.batches[1]?.id}`)) {
      await sleep(50);
    }
    killed.child.kill("SIGKILL");
    expect((await killed.done).signal).toBe("SIGKILL");
    const server = await startServe(["--store", db], env);
    cleanups.push(() => void server.proc.child.kill("SIGKILL"));
    const run = (await (await server.fetch("/api/runs/r_detach_serve")).json()) as ListedRow;
    expect(run).toMatchObject({
      status: "interrupted",
      batches: { waiting: 1, total: 1, batches: [{ batchId: mock.batches[0]!.id, requests: 8 }] },
    });
    const page = (await (await server.fetch("/api/runs")).json()) as { runs: ListedRow[] };
    expect(page.runs.find((r) => r.id === "r_detach_serve")).toMatchObject({
      batches: { waiting: 1 },
    });
    if (!SKIP_BROWSER) {
      // The web UI says it too: in the runs list, and on the run's page.
      const { page, close } = await openPage(`${server.url}/`);
      try {
        const row = page.locator('tr[data-run="r_detach_serve"]');
        await row.locator(".batches").waitFor();
        await expect(row.locator(".batches").textContent()).resolves.toMatch(
          /waiting on 1 provider batch \(8 requests, oldest 0m\)/,
        );
        await row.getByRole("link", { name: "r_detach_serve" }).click();
        await page.locator(".meta.batches").waitFor();
        await expect(page.locator(".meta.batches").textContent()).resolves.toMatch(
          /^Batches: waiting on 1 provider batch/,
        );
      } finally {
        await close();
      }
    }
    // The boot's recovery sweep ran before the server listened: the killed run is interrupted,
    // and neither run's batch was submitted again.
    expect(server.proc.stderr()).toMatch(/recovered run r_killed_serve/);
    const recovered = (await (await server.fetch("/api/runs/r_killed_serve")).json()) as ListedRow;
    expect(recovered).toMatchObject({ status: "interrupted", batches: { waiting: 1 } });
    expect(creations(mock)).toBe(2);
    expect(mock.log.filter((line) => line.startsWith("POST"))).toEqual([
      "POST /v1/files",
      "POST /v1/batches",
      "POST /v1/files",
      "POST /v1/batches",
    ]);
  }, 60_000);

  it("a sample's timeout does not count the time its key waits on the batch", async () => {
    // Each batch takes 1.5 s at the provider; the samples' timeout is 400 ms of their own time.
    const mock = await mockBatch(1_500);
    const { dir, db } = project({ "eval.mjs": batchEval(6, "batch: { pollSeconds: 0.05 },") });
    const run = await runCli(
      ["run", "eval.mjs", "--run-id", "r_batch_timeout", "--timeout", "400"],
      {
        cwd: dir,
        env: envOf(mock),
      },
    );
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(statuses(db, "r_batch_timeout")).toEqual({ scored: 6 });
    expect(creations(mock)).toBe(1);
  }, 60_000);

  it("nor does its per-sample wallMs limit", async () => {
    const mock = await mockBatch(1_500);
    const extra = "batch: { pollSeconds: 0.05 }, limits: { wallMs: 400 },";
    const { dir, db } = project({ "eval.mjs": batchEval(6, extra) });
    const run = await runCli(["run", "eval.mjs", "--run-id", "r_batch_wall"], {
      cwd: dir,
      env: envOf(mock),
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const raw = new Database(db, { readonly: true });
    try {
      const rows = raw
        .prepare("SELECT status, limit_hit, output FROM attempts WHERE run_id = 'r_batch_wall'")
        .all() as { status: string; limit_hit: string | null; output: string }[];
      expect(rows).toHaveLength(6);
      for (const row of rows) {
        expect(row).toMatchObject({ status: "scored", limit_hit: null });
        expect(JSON.parse(row.output)).toMatch(/^answer: question \d$/);
      }
    } finally {
      raw.close();
    }
  }, 60_000);
});

describe("scorers.modelGraded under --batch", () => {
  it("judges through the run's batches at the batch tier: one solver batch, one judge batch, across two detaches and a resume, nothing sent one by one", async () => {
    // The judge's prompt carries the template's "GRADE:" lines: the mock grades it C.
    const mock = await startMockBatch({
      delayMs: 600_000,
      reply: (key) => (key.includes("GRADE:") ? "Matches the target.\nGRADE: C" : `answer: ${key}`),
    });
    mocks.push(mock);
    const text = batchEval(12, "batch: { pollSeconds: 0.05 },").replace(
      "scorers: [scorers.exact()],",
      'scorers: [scorers.exact(), scorers.modelGraded({ model: "gpt-4o-mini" })],',
    );
    const { dir, db } = project({ "eval.mjs": text });
    const env = envOf(mock);
    const run = await runCli(["run", "eval.mjs", "--run-id", "r_judged", "--detach"], {
      cwd: dir,
      env,
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(creations(mock)).toBe(1);

    // The answers' batch ends; `resume --detach` collects it, submits the judgings and leaves.
    mock.batches[0]!.endsAt = 0;
    const again = await runCli(["resume", "r_judged", "--detach"], { cwd: dir, env });
    expect(again.code, again.stderr + again.stdout).toBe(0);
    expect(again.stderr).toMatch(/r_judged detached: waiting on 1 provider batch/);
    expect(creations(mock)).toBe(2);
    expect(statuses(db, "r_judged")).toEqual({});

    // The provider finishes each batch as soon as it exists.
    const finish = setInterval(() => mock.batches.forEach((b) => (b.endsAt = 0)), 20);
    cleanups.push(() => clearInterval(finish));
    const resumed = await runCli(["resume", "r_judged", "--json"], { cwd: dir, env });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(creations(mock)).toBe(2);
    const [solved, judged] = mock.batches;
    expect(solved!.items.every((i) => !i.key.includes("GRADE:"))).toBe(true);
    expect(judged!.items).toHaveLength(12);
    expect(judged!.items.every((i) => i.key.includes("GRADE:"))).toBe(true);
    // Nothing went to the direct chat endpoint, and every request was billed once.
    expect(mock.log.filter((l) => l.includes("/chat/completions"))).toEqual([]);
    const billed = mock.billed();
    expect(Object.keys(billed)).toHaveLength(24);
    expect(Object.values(billed).every((n) => n === 1)).toBe(true);

    const report = JSON.parse(resumed.stdout) as {
      metrics: { scorer: string; mean: number }[];
    };
    expect(report.metrics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ scorer: "exact", mean: 1 }),
        expect.objectContaining({ scorer: "model_graded", mean: 1 }),
      ]),
    );
    // Each attempt paid for two calls (the answer and its judging), both at the batch tier.
    const perCall = (10 * 0.075 + 5 * 0.3) / 1e6;
    const raw = new Database(db, { readonly: true });
    try {
      const rows = raw
        .prepare("SELECT status, cost_usd FROM attempts WHERE run_id = 'r_judged'")
        .all() as { status: string; cost_usd: number }[];
      expect(rows).toHaveLength(12);
      for (const row of rows) {
        expect(row.status).toBe("scored");
        expect(row.cost_usd).toBeCloseTo(2 * perCall, 15);
      }
    } finally {
      raw.close();
    }
  }, 60_000);
});

describe.skipIf(SKIP_POSTGRES)("stet run --batch --detach on a PostgreSQL store", () => {
  it("detaches, lists the run waiting, cancels its open batch, and a resume collects the rest buying nothing twice", async () => {
    const mock = await mockBatch(600_000);
    const { url, db } = testSchemaPool();
    const { dir } = project({
      "eval.mjs": batchEval(10, "batch: { pollSeconds: 0.05, maxRequests: 5 },"),
    });
    const env = { ...envOf(mock), STET_STORE: url };
    const run = await runCli(["run", "eval.mjs", "--run-id", "r_pg_detach", "--detach"], {
      cwd: dir,
      env,
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(creations(mock)).toBe(2);
    const listed = JSON.parse(
      (await runCli(["list", "--json"], { cwd: dir, env })).stdout,
    ) as ListedRow[];
    expect(listed[0]).toMatchObject({
      id: "r_pg_detach",
      status: "interrupted",
      batches: { waiting: 2, total: 2, waitingRequests: 10 },
    });

    const [first, second] = mock.batches;
    first!.endsAt = 0;
    const cancel = await runCli(["cancel", "r_pg_detach"], { cwd: dir, env });
    expect(cancel.code, cancel.stderr + cancel.stdout).toBe(0);
    expect(mock.log).toContain(`POST /v1/batches/${second!.id}/cancel`);

    const finish = setInterval(() => mock.batches.slice(2).forEach((b) => (b.endsAt = 0)), 20);
    cleanups.push(() => clearInterval(finish));
    const resumed = await runCli(["resume", "r_pg_detach"], { cwd: dir, env });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(creations(mock)).toBe(3);
    const scored = await db.query<{ n: string }>(
      "SELECT COUNT(DISTINCT sample_id) AS n FROM attempts WHERE run_id = 'r_pg_detach' AND status = 'scored'",
    );
    expect(Number(scored.rows[0]!.n)).toBe(10);
    const billed = mock.billed();
    expect(Object.keys(billed)).toHaveLength(10);
    expect(Object.values(billed).every((n) => n === 1)).toBe(true);
  }, 60_000);
});
