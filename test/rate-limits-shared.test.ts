import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { startCli, type CliProcess } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";
import { startRateLimitedServer, type RateLimitedServer } from "./helpers/rate-limited-server.js";

// One budget per store: processes that share a store share each endpoint's declared limit. The
// server enforces 600 requests per 6 s window ("600 RPM" ten times faster, docs/rate-limits.md);
// only counts are asserted: the achieved rate ÷ limit is the bench's (rate-limits group).

const KEY = "sk-rate-limit-shared-0123456789";
const WINDOW_MS = 6000;
const PER_WINDOW = 600;

function evalText(name: string, n: number, concurrency: number, perWindow = PER_WINDOW): string {
  return `import { defineEval, solvers, scorers } from "stet";
export default defineEval({
  name: "${name}",
  dataset: Array.from({ length: ${n} }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "ok" })),
  solver: solvers.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, maxTokens: 5, backoff: { initialMs: 50 } }),
  scorers: [scorers.exact()],
  concurrency: ${concurrency},
  rateLimits: { "openai:gpt-test": { rpm: ${(perWindow * 60_000) / WINDOW_MS}, windowMs: ${WINDOW_MS} } },
});
`;
}

const servers: RateLimitedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

/** Runs `stet` processes in one project; any still running when the test ends are killed. */
function processes(dir: string, env: Record<string, string>) {
  const started: CliProcess[] = [];
  onTestFinished(async () => {
    for (const p of started) if (p.child.exitCode === null) p.child.kill("SIGKILL");
    await Promise.all(started.map((p) => p.done));
  });
  return (args: string[], extra: Record<string, string> = {}): CliProcess => {
    const p = startCli(args, { cwd: dir, env: { ...env, ...extra } });
    started.push(p);
    return p;
  };
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("one rate-limit budget per store", () => {
  it("two runs at once on one SQLite file share the budget: no errors, ≤ 1 % 429s, the window kept", async () => {
    const mock = await startRateLimitedServer({ rpm: PER_WINDOW, windowMs: WINDOW_MS });
    servers.push(mock);
    const project = evalProject({
      "a.mjs": evalText("a", 500, 64),
      "b.mjs": evalText("b", 500, 64),
    });
    onTestFinished(project.cleanup);
    const stet = processes(project.dir, { MOCK_URL: mock.url, OPENAI_API_KEY: KEY });
    const [a, b] = [stet(["run", "a.mjs", "--json"]), stet(["run", "b.mjs", "--json"])];
    for (const p of [a, b]) {
      const done = await p.done;
      expect(done.code, done.stderr).toBe(0);
      const report = JSON.parse(done.stdout) as {
        counts: { scored: number; errored: number };
        rateLimits: { requests: number }[];
      };
      expect(report.counts).toMatchObject({ scored: 500, errored: 0 });
      expect(report.rateLimits[0]!.requests).toBeGreaterThanOrEqual(500);
    }
    const counts = mock.counts();
    expect(counts.admitted).toBe(1000);
    expect(counts.rejected).toBeLessThanOrEqual(counts.requests / 100);
    expect(counts.maxRequestsInWindow).toBeLessThanOrEqual(PER_WINDOW * 1.01);
  }, 180_000);

  it.skipIf(SKIP_POSTGRES)(
    "four workers on PostgreSQL at concurrency 16 share one limit; two SIGKILLed mid-run, the others finish under it",
    async () => {
      const mock = await startRateLimitedServer({ rpm: PER_WINDOW, windowMs: WINDOW_MS });
      servers.push(mock);
      const project = evalProject({ "e.mjs": evalText("workers", 1000, 16) });
      onTestFinished(project.cleanup);
      const { url, db } = testSchemaPool();
      const env = {
        MOCK_URL: mock.url,
        OPENAI_API_KEY: KEY,
        STET_STORE: url,
      };
      const stet = processes(project.dir, env);
      const run = stet(["run", "e.mjs", "--distributed", "--concurrency", "16"]);
      const first = await run.waitFor(/^run (r_\w+) · /m);
      const runId = first[1]!;
      // The two to be killed hold their keys 5 s; the others keep the default 30 s, which no live
      // process on a loaded machine misses.
      const workers = [5000, 5000, undefined].map((leaseMs) =>
        stet(
          ["worker", "--run", runId, "--concurrency", "16", "--json"],
          leaseMs === undefined ? {} : { STET_LEASE_MS: String(leaseMs) },
        ),
      );
      // Mid-run: a third of the samples answered, then two workers die without a word.
      await until(() => mock.counts().admitted >= 330);
      workers[0]!.child.kill("SIGKILL");
      workers[1]!.child.kill("SIGKILL");
      const survivors = [run, workers[2]!];
      for (const p of survivors) {
        const done = await p.done;
        expect(done.code, done.stderr).toBe(0);
      }
      const { rows } = await db.query<{ status: string; n: string }>(
        `SELECT status, COUNT(DISTINCT sample_id) AS n FROM attempts_now GROUP BY status`,
      );
      expect(rows).toEqual([{ status: "scored", n: "1000" }]);
      const counts = mock.counts();
      expect(counts.rejected).toBeLessThanOrEqual(counts.requests / 100);
      expect(counts.maxRequestsInWindow).toBeLessThanOrEqual(PER_WINDOW * 1.01);
      // Every surviving process's figures are stored; the killed ones' up to their last record.
      const { rows: waits } = await db.query<{ owners: string; requests: string }>(
        `SELECT COUNT(DISTINCT owner) AS owners, SUM(requests) AS requests FROM rate_waits WHERE run_id = $1`,
        [runId],
      );
      expect(Number(waits[0]!.owners)).toBeGreaterThanOrEqual(2);
      expect(Number(waits[0]!.requests)).toBeLessThanOrEqual(counts.requests);
    },
    240_000,
  );

  it("a 429's pause is the store's: a run started while another is paused waits for it instead of being refused", async () => {
    // 100 requests per 6 s, no declared limit, no rate-limit headers: run a (150 samples) fills
    // the window, is refused and pauses until it empties (retry-after). Run b (20 samples) starts
    // during that pause: it reads the pause from the store before its first request and waits.
    // Paused on its own 429s only, b sent its 20 requests into the full window at once: 20 429s.
    const mock = await startRateLimitedServer({ rpm: 100, windowMs: WINDOW_MS, headers: false });
    servers.push(mock);
    const undeclared = (name: string, n: number) =>
      evalText(name, n, 64).replace(/\n {2}rateLimits: .*\n/, "\n");
    const project = evalProject({ "a.mjs": undeclared("a", 150), "b.mjs": undeclared("b", 20) });
    onTestFinished(project.cleanup);
    const stet = processes(project.dir, { MOCK_URL: mock.url, OPENAI_API_KEY: KEY });
    const a = stet(["run", "a.mjs", "--json"]);
    await until(() => mock.counts().rejected > 0);
    const b = stet(["run", "b.mjs", "--json"]);
    const reports = [];
    for (const p of [a, b]) {
      const done = await p.done;
      expect(done.code, done.stderr).toBe(0);
      reports.push(
        JSON.parse(done.stdout) as {
          counts: { scored: number; errored: number };
          rateLimits: { requests: number; rejected: number; throttled: number }[];
        },
      );
    }
    console.log(JSON.stringify(reports.map((r) => r.rateLimits)));
    expect(reports[0]!.counts).toMatchObject({ scored: 150, errored: 0 });
    expect(reports[1]!.counts).toMatchObject({ scored: 20, errored: 0 });
    expect(reports[1]!.rateLimits[0]!.rejected).toBeLessThanOrEqual(2);
  }, 180_000);

  it.skipIf(SKIP_POSTGRES)(
    "four workers on PostgreSQL, two SIGKILLed: the two left reach the limit again within the lease time",
    async () => {
      // 180 requests per 6 s: a rate two processes reach on a loaded 2-core machine, so what is
      // counted is the budget the dead left behind, not the CPU the living have.
      const perWindow = 180;
      const mock = await startRateLimitedServer({ rpm: perWindow, windowMs: WINDOW_MS });
      servers.push(mock);
      const project = evalProject({ "e.mjs": evalText("survivors", 600, 16, perWindow) });
      onTestFinished(project.cleanup);
      const { url } = testSchemaPool();
      const stet = processes(project.dir, {
        MOCK_URL: mock.url,
        OPENAI_API_KEY: KEY,
        STET_STORE: url,
      });
      const run = stet(["run", "e.mjs", "--distributed", "--concurrency", "16"]);
      const runId = (await run.waitFor(/^run (r_\w+) · /m))[1]!;
      const workers = [0, 1, 2].map(() =>
        stet(["worker", "--run", runId, "--concurrency", "16", "--json"]),
      );
      await until(() => mock.counts().admitted >= 200);
      workers[0]!.child.kill("SIGKILL");
      workers[1]!.child.kill("SIGKILL");
      // On the server's clock (it runs in this process).
      const killedAt = performance.now() + performance.timeOrigin;
      for (const p of [run, workers[2]!]) {
        const done = await p.done;
        expect(done.code, done.stderr).toBe(0);
      }
      const counts = mock.counts();
      // A dead worker's chunk lapses a lease (6 s / 40 = 150 ms) after it was taken; a second
      // more for the living to notice. The full window after that, with work left past its end:
      const from = killedAt + 1000;
      const to = from + WINDOW_MS;
      expect(counts.admittedAt.at(-1)!).toBeGreaterThan(to);
      const inWindow = counts.admittedAt.filter((at) => at >= from && at < to).length;
      console.log(JSON.stringify({ inWindow, ...counts, admittedAt: undefined }));
      // The bucket's design gives ~0.93 of the limit; 0.8 leaves room for a loaded machine.
      expect(inWindow).toBeGreaterThanOrEqual(0.8 * perWindow);
      // What the dead had in flight is bought again by the living: at most their concurrency.
      expect(counts.admitted).toBeGreaterThanOrEqual(600);
      expect(counts.admitted).toBeLessThanOrEqual(600 + 2 * 16);
      expect(counts.rejected).toBeLessThanOrEqual(counts.requests / 100);
      expect(counts.maxRequestsInWindow).toBeLessThanOrEqual(perWindow * 1.01 + 1);
    },
    240_000,
  );
});
