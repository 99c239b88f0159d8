import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { startCli } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { startServe, writeChatEval } from "./helpers/serve.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./helpers/postgres.js";
import { tempDir } from "./helpers/temp-store.js";

const N = 40;
const CONCURRENCY = 2;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A store holding a run that a SIGKILLed `stet run` left behind, and the evals directory. */
async function interruptedRun(mock: MockOpenAI) {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const evals = join(tmp.dir, "evals");
  mkdirSync(evals);
  const evalFile = writeChatEval(evals, N, CONCURRENCY);
  const db = join(tmp.dir, "stet.db");
  const cli = startCli(["run", evalFile, "--store", db], { env: { MOCK_URL: mock.url } });
  const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
  // Let some samples commit, then kill the run mid-way.
  while (Object.keys(mock.counts()).length < 8) await new Promise((r) => setTimeout(r, 20));
  cli.child.kill("SIGKILL");
  await cli.done;
  return { db, evals, runId, requestedBeforeKill: { ...mock.counts() } };
}

describe.skipIf(SKIP_BROWSER)("web UI (real server process, real Chromium)", () => {
  it("shows an interrupted run, resumes it to completion without re-buying finished samples, filters samples and opens one", async () => {
    // Samples whose id ends in 3 are answered wrong, so the run has failures to filter.
    const mock = await startMockOpenAI({
      latencyMs: 25,
      reply: ({ key }) => (key.endsWith("3") ? "wrong" : key),
    });
    cleanups.push(() => mock.close());
    const { db, evals, runId, requestedBeforeKill } = await interruptedRun(mock);
    const server = await startServe(["--store", db, "--evals", evals], { MOCK_URL: mock.url });
    cleanups.push(() => server.proc.child.kill("SIGKILL"));
    const before = (await (await server.fetch(`/api/runs/${runId}`)).json()) as {
      status: string;
      counts: { done: number; remaining: number };
    };
    // Boot recovery marked the dead owner's run interrupted.
    expect(before.status).toBe("interrupted");
    expect(before.counts.remaining).toBeGreaterThan(0);

    const { page, errors, close } = await openPage(`${server.url}/`);
    cleanups.push(close);
    const row = page.locator(`tr[data-run="${runId}"]`);
    await row.locator(".badge.interrupted").waitFor();
    await expect(row.textContent()).resolves.toContain(`${before.counts.done}/${N}`);

    await row.getByRole("link", { name: runId }).click();
    const resume = page.getByRole("button", { name: `Resume (${before.counts.remaining} left)` });
    await resume.click();
    await expect
      .poll(() => page.locator(".summary .counts").textContent(), { timeout: 20_000 })
      .toMatch(new RegExp(`^${N}/${N} done`));
    await page.locator(".summary .badge.completed").waitFor();
    expect(await page.getByRole("button", { name: /Resume/ }).count()).toBe(0);
    // The eval's model ("gpt-test") has no price: its cost is unknown, not $0. Seen from the
    // page, no invocation reused anything: the run's spend is what it spent.
    await expect
      .poll(() => page.locator("p.meta", { hasText: "Cost" }).textContent())
      .toMatch(/^Cost unknown \(40 unpriced\) spent on this run · \d+ in \/ \d+ out tokens$/);

    // Rescore scores the stored outputs again; no model request is made for them (checked below).
    await page.getByRole("button", { name: "Rescore" }).click();
    await expect
      .poll(() => page.locator(".notice").textContent(), { timeout: 20_000 })
      .toContain(`Rescored ${N} stored outputs`);
    await page.locator(".summary .badge.completed").waitFor();

    // Keys stored before the kill were never requested again; only the ones in flight at the
    // kill (at most the concurrency) were requested twice.
    const counts = mock.counts();
    expect(Object.keys(counts)).toHaveLength(N);
    const twice = Object.entries(counts).filter(([, n]) => n > 1);
    expect(twice.length).toBeLessThanOrEqual(CONCURRENCY);
    for (const [key] of twice) expect(requestedBeforeKill[key]).toBe(1);

    // The ResultSet button saves the run's EvalPort ResultSet.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "ResultSet" }).click(),
    ]);
    const resultSet = JSON.parse(readFileSync(await download.path(), "utf8")) as {
      results: { test_case_id: string }[];
    };
    expect(download.suggestedFilename()).toBe(`${runId}.resultset.json`);
    expect(resultSet.results).toHaveLength(N);

    // The score-distribution chart (the HTML report's): 4 samples at 0, the other 36 at 1.
    const bins = await page
      .locator('figure.score-chart g.panel[data-scorer="exact"] g.bin')
      .evaluateAll((gs) => gs.map((g) => Number(g.getAttribute("data-count"))));
    expect(bins).toEqual([4, 0, 0, 0, 0, 0, 0, 0, 0, 36]);

    // Filters: the failing samples are exactly those answered wrong.
    await page.locator('select[name="result"]').selectOption("fail");
    await expect.poll(() => page.locator("table.samples tbody tr").count()).toBe(4);
    const failing = await page
      .locator("table.samples tbody tr")
      .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-sample")));
    expect(failing).toEqual(["s03", "s13", "s23", "s33"]);
    // Input and target stand beside the output.
    const s03 = page.locator('table.samples tr[data-sample="s03"]');
    await expect(s03.locator("td.input").textContent()).resolves.toBe("s03");
    await expect(s03.locator("td.target").textContent()).resolves.toBe("s03");
    await expect(s03.locator("td.output").textContent()).resolves.toBe("wrong");
    await page.locator('input[name="search"]').fill("s13");
    await expect.poll(() => page.locator("table.samples tbody tr").count()).toBe(1);

    await page.getByRole("link", { name: "s13" }).click();
    const attempt = page.locator("article.attempt").first();
    await attempt.waitFor();
    await expect(page.locator("pre.input").textContent()).resolves.toBe("s13");
    await expect(attempt.locator("pre.output").textContent()).resolves.toBe("wrong");
    await expect(attempt.textContent()).resolves.toContain("exact: 0.000");
    await expect(attempt.textContent()).resolves.toContain("out tokens · cost unknown");
    // Rescored once above: the attempt lists that scoring, its output not produced again.
    await expect(attempt.locator("details.scorings summary").textContent()).resolves.toBe(
      "Rescored 1× (the output was not produced again)",
    );

    expect(errors).toEqual([]);
  });

  it("starts a run from the runs page and follows it live to completion", async () => {
    const mock = await startMockOpenAI({ latencyMs: 20 });
    cleanups.push(() => mock.close());
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    writeChatEval(tmp.dir, N, 4);
    const server = await startServe(["--store", join(tmp.dir, "stet.db"), "--evals", tmp.dir], {
      MOCK_URL: mock.url,
    });
    cleanups.push(() => server.proc.child.kill("SIGKILL"));

    const { page, errors, close } = await openPage(`${server.url}/`);
    cleanups.push(close);
    await page.getByText("No runs yet.").waitFor();
    await page.locator('select[name="eval"]').selectOption("chat-eval");
    await page.getByRole("button", { name: "Start run" }).click();
    await page.waitForURL(/#\/runs\/r_\w+$/);
    await expect
      .poll(() => page.locator(".summary .counts").textContent(), { timeout: 20_000 })
      .toMatch(new RegExp(`^${N}/${N} done`));
    await expect(page.locator(".metrics tbody").textContent()).resolves.toContain("1.000");
    expect(Object.values(mock.counts())).toEqual(Array(N).fill(1));
    // Under the server's Content-Security-Policy the stylesheet applies and the progress bar,
    // sized through the CSSOM, is full: nothing the page needs is refused as inline.
    const header = await page
      .locator("header")
      .evaluate((e) => e.ownerDocument.defaultView!.getComputedStyle(e).backgroundColor);
    expect(header).toBe("rgb(29, 36, 48)");
    const bar = await page.locator(".summary .bar .done").evaluate((e) => e.style.width);
    expect(bar).toBe("100%");

    await page.getByRole("link", { name: "← Runs" }).click();
    await page.locator("tr[data-run] .badge.completed").waitFor();
    expect(errors).toEqual([]);
  });

  it("cancels a live run, which then offers Resume (N left) and finishes when resumed", async () => {
    const mock = await startMockOpenAI({ latencyMs: 150 });
    cleanups.push(() => mock.close());
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    writeChatEval(tmp.dir, N, CONCURRENCY);
    const server = await startServe(["--store", join(tmp.dir, "stet.db"), "--evals", tmp.dir], {
      MOCK_URL: mock.url,
    });
    cleanups.push(() => server.proc.child.kill("SIGKILL"));

    const { page, errors, close } = await openPage(`${server.url}/`);
    cleanups.push(close);
    await page.locator('select[name="eval"]').selectOption("chat-eval");
    await page.getByRole("button", { name: "Start run" }).click();
    await page.waitForURL(/#\/runs\/r_\w+$/);
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.locator(".summary .badge.interrupted").waitFor({ timeout: 20_000 });
    const resume = page.getByRole("button", { name: /^Resume \(\d+ left\)$/ });
    const left = Number((await resume.textContent())!.match(/\d+/)![0]);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(N);

    await resume.click();
    await expect
      .poll(() => page.locator(".summary .counts").textContent(), { timeout: 30_000 })
      .toMatch(new RegExp(`^${N}/${N} done`));
    // Cancelling let in-flight samples finish: nothing was bought twice.
    expect(Object.values(mock.counts())).toEqual(Array(N).fill(1));
    expect(errors).toEqual([]);
  });

  it.skipIf(SKIP_POSTGRES)(
    "two servers on one PostgreSQL store: one follows the other's run, may not cancel it, and resumes it once cancelled",
    async () => {
      // The model answers nothing until A cancels, so the run is still live when B tries to.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const mock = await startMockOpenAI({ respond: async () => (await gate, undefined) });
      cleanups.push(() => mock.close());
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      writeChatEval(tmp.dir, N, CONCURRENCY);
      const { schema, drop } = testSchema();
      cleanups.push(drop);
      const url = new URL(TEST_POSTGRES_URL);
      url.searchParams.set("schema", schema);
      const args = ["--store", url.toString(), "--evals", tmp.dir];
      const [a, b] = await Promise.all([
        startServe(args, { MOCK_URL: mock.url }),
        startServe(args, { MOCK_URL: mock.url }),
      ]);
      for (const s of [a, b]) cleanups.push(() => s!.proc.child.kill("SIGKILL"));

      const pageA = await openPage(`${a!.url}/`);
      cleanups.push(pageA.close);
      await pageA.page.locator('select[name="eval"]').selectOption("chat-eval");
      await pageA.page.getByRole("button", { name: "Start run" }).click();
      await pageA.page.waitForURL(/#\/runs\/r_\w+$/);
      const runId = pageA.page.url().split("/").pop()!;

      // Server B follows the run from the store; it may not cancel what A executes.
      const pageB = await openPage(`${b!.url}/#/runs/${runId}`);
      cleanups.push(pageB.close);
      await pageB.page.locator(".summary .badge.running").waitFor();
      await pageB.page.getByRole("button", { name: "Cancel" }).click();
      await expect(pageB.page.locator(".notice .error").textContent()).resolves.toMatch(
        /executed by another process/,
      );

      await pageA.page.getByRole("button", { name: "Cancel" }).click();
      // Cancelling lets the in-flight samples finish: now the model may answer.
      await pageA.page
        .locator(".notice")
        .getByText(/Cancelling/)
        .waitFor();
      release();
      const resume = pageB.page.getByRole("button", { name: /^Resume \(\d+ left\)$/ });
      await resume.waitFor({ timeout: 20_000 });
      await resume.click();
      await pageB.page.locator(".summary .badge.completed").waitFor({ timeout: 30_000 });
      await expect(pageB.page.locator(".summary .counts").textContent()).resolves.toMatch(
        new RegExp(`^${N}/${N} done`),
      );
      // Cancelled, then resumed on the other server: every sample was bought once.
      expect(Object.values(mock.counts())).toEqual(Array(N).fill(1));
      expect(pageA.errors).toEqual([]);
      // B's refused cancel is the one failed request (the browser logs its 409).
      expect(pageB.errors).toEqual([expect.stringMatching(/status of 409/)]);
    },
  );

  it("asks for the server's token and then shows the runs", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = await startServe(["--store", join(tmp.dir, "stet.db")], {
      STET_TOKEN: "ui-test-token",
    });
    cleanups.push(() => server.proc.child.kill("SIGKILL"));

    const { page, close } = await openPage(`${server.url}/`);
    cleanups.push(close);
    await page.locator('input[name="token"]').fill("ui-test-token");
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByText("No runs yet.").waitFor();
  });
});
