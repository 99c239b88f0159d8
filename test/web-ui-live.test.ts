import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { evalProject } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";

// The run page's metrics follow a running run. Its samples finish only when the test releases
// them (a file per sample in $GATE), so the run pauses at known counts: whatever the page's
// throttle skipped while samples finished, the metrics must catch up with the counts during the
// pause, without another sample finishing to prompt them.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const N = 6;

const GATED = `import { existsSync } from "node:fs";
import { join } from "node:path";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "gated",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "s" + i, input: "s" + i, target: "s" + i })),
  solver: async ({ id, input }) => {
    while (!existsSync(join(process.env.GATE, id))) await new Promise((r) => setTimeout(r, 20));
    return input;
  },
  scorers: [scorers.exact()],
  concurrency: 1,
});
`;

describe.skipIf(SKIP_BROWSER)("web UI: live metrics (real server, real Chromium)", () => {
  it("refreshes the metrics' sample count while the run executes, up to every pause", async () => {
    const p = evalProject({ "evals/gated.mjs": GATED });
    cleanups.push(p.cleanup);
    const gate = join(p.dir, "gate");
    mkdirSync(gate);
    const release = (id: string) => writeFileSync(join(gate, id), "");
    const server = await startServe(["--store", p.db, "--evals", join(p.dir, "evals")], {
      GATE: gate,
    });
    cleanups.push(() => {
      // Every sample released, so the server's run ends instead of waiting for ever.
      for (let i = 0; i < N; i++) release(`s${i}`);
      server.proc.child.kill("SIGKILL");
    });

    const { page, errors, close } = await openPage(`${server.url}/`);
    cleanups.push(close);
    await page.locator('select[name="eval"]').selectOption("gated");
    await page.getByRole("button", { name: "Start run" }).click();
    await page.waitForURL(/#\/runs\/r_\w+$/);
    const counts = page.locator(".summary .counts");
    const samples = page.locator(".metrics tbody tr td:nth-child(3)");
    const poll = { timeout: 30_000, interval: 50 };

    // Samples finish one after another, each as soon as the last one shows: most progress events
    // come within the throttle's gap of a refresh; the pause after each must still show it.
    for (let done = 1; done <= 3; done++) {
      release(`s${done - 1}`);
      await expect.poll(() => counts.textContent(), poll).toMatch(new RegExp(`^${done}/${N} done`));
      await expect.poll(() => samples.textContent(), poll).toBe(String(done));
      await expect(page.locator(".summary .badge").textContent()).resolves.toBe("running");
    }

    for (let i = 3; i < N; i++) release(`s${i}`);
    await page.locator(".summary .badge.completed").waitFor({ timeout: 30_000 });
    await expect.poll(() => samples.textContent(), poll).toBe(String(N));
    await expect(page.locator(".metrics tbody").textContent()).resolves.toContain("1.000");
    expect(errors).toEqual([]);
  });
});
