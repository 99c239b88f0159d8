import { afterEach, describe, expect, it } from "vitest";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { startCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { startRateLimitedServer } from "./helpers/rate-limited-server.js";
import { startServe } from "./helpers/serve.js";

// The run page shows a run's rate limits: while it runs, that requests wait on one; and its
// figures per endpoint (requests, throttled, 429s, time waiting). The run executes in a CLI
// process on the store the server reads; the model server admits 3 requests a minute per key and
// sends no rate-limit headers, so a run at concurrency 4 is refused a request and pauses for the
// rest of the minute, its next requests waiting on the pause. (The API cancels only runs this
// server executes: the CLI's run is stopped with SIGINT.)

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const KEY = "sk-ui-rate-limits-0123456789abcdef";

const EVAL = `import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "paced",
  dataset: Array.from({ length: 12 }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "ok" })),
  solver: solvers.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, maxTokens: 5 }),
  scorers: [scorers.exact()],
  concurrency: 4,
});
`;

describe.skipIf(SKIP_BROWSER)("web UI: rate limits (real server, real Chromium)", () => {
  it("shows that a running run waits on a rate limit, then its figures per endpoint", async () => {
    const mock = await startRateLimitedServer({ rpm: 3, windowMs: 60_000, headers: false });
    cleanups.push(() => mock.close());
    const p = evalProject({ "e.mjs": EVAL });
    cleanups.push(p.cleanup);
    const run = startCli(["run", "e.mjs", "--store", p.db], {
      cwd: p.dir,
      env: { MOCK_URL: mock.url, OPENAI_API_KEY: KEY },
    });
    cleanups.push(async () => {
      if (run.child.exitCode === null) run.child.kill("SIGKILL");
      await run.done;
    });
    const runId = (await run.waitFor(/^run (r_\w+) · /m))[1]!;
    const server = await startServe(["--store", p.db]);
    cleanups.push(() => server.proc.child.kill("SIGKILL"));

    const { page, errors, close } = await openPage(`${server.url}/#/runs/${runId}`);
    cleanups.push(close);
    const poll = { timeout: 30_000, interval: 100 };
    const note = page.locator(".summary .progress .rate-waiting");
    // The run waits on the pause until the mock's minute ends (its retry-after): up to 60 s for
    // the note, which a full suite on a loaded machine needed more than 30 s to show once.
    await expect
      .poll(() => note.textContent(), { ...poll, timeout: 60_000 })
      .toMatch(/^ · waiting on a rate limit \(\d+ requests?\)$/);
    await expect(page.locator(".summary .badge").textContent()).resolves.toBe("running");

    // Stopped where it runs (Ctrl-C): its waiting requests abandoned after the grace period.
    run.child.kill("SIGINT");
    expect((await run.done).code).toBe(130);
    await page.locator(".summary .badge.interrupted").waitFor({ timeout: 30_000 });
    const counts = mock.counts();
    expect(counts.rejected).toBeGreaterThan(0);
    const row = page.locator("table.rate-limits tbody tr");
    await expect.poll(() => row.count(), poll).toBe(1);
    const cells = await row.locator("td").allTextContents();
    expect(cells[0]).toMatch(new RegExp(`^openai:gpt-test@${mock.url} key:[0-9a-f]{16}$`));
    expect(cells.slice(1, 4)).toEqual([
      String(counts.requests),
      // Requests that waited and then went (those abandoned while waiting never went).
      expect.stringMatching(/^\d+$/) as string,
      String(counts.rejected),
    ]);
    expect(cells[4]).toMatch(/^\d+\.\ds$/);
    await expect(note.count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(KEY);
    expect(errors).toEqual([]);
    // Its waits add up past the suite's default 60 s on a loaded machine (Chromium's start, up to
    // 60 s for the note, the run's 10 s grace after SIGINT, up to 30 s for the badge): it took
    // 13-14 s alone and timed out once at 60 s late in a full suite run (2026-12-06).
  }, 180_000);
});
