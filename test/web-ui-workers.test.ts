import { afterEach, describe, expect, it } from "vitest";
import { workerId } from "../src/runs/run-workers.js";
import { draft } from "../src/store/contract/fixtures.js";
import { requireLeases } from "../src/store/types.js";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { seedDistributedRun } from "./helpers/distributed-run.js";
import { startServe } from "./helpers/serve.js";
import { tempStore } from "./helpers/temp-store.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe.skipIf(SKIP_BROWSER)("web UI of a distributed run (real server, real Chromium)", () => {
  it("lists its workers as text, follows its progress, and marks it in the runs list", async () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    const { runId, active, left } = await seedDistributedRun(t.store);
    // A worker's host is whatever its machine says: shown as text, never parsed as markup.
    const hostile = '<img src=x onerror="window.__pwned=1">';
    const odd = {
      host: hostile,
      pid: 7,
      token: "odd-worker-token",
      concurrency: 1,
      leaseMs: 60_000,
    };
    await requireLeases(t.store).register(runId, odd);

    const server = await startServe(["--store", t.path]);
    cleanups.push(async () => {
      server.proc.child.kill("SIGTERM");
      await server.proc.done;
    });
    const { page, errors, close } = await openPage(`${server.url}/`);
    cleanups.push(close);

    const row = page.locator(`tr[data-run="${runId}"]`);
    await row.locator(".badge.running").waitFor();
    await expect(row.locator(".distributed").textContent()).resolves.toBe(
      " distributed · 2 workers",
    );
    await row.getByRole("link", { name: runId }).click();

    const workers = page.locator("table.workers tbody tr");
    await expect.poll(() => workers.count()).toBe(3);
    const cells = (id: string) =>
      page
        .locator(`tr[data-worker="${id}"] td`)
        .evaluateAll((tds) => tds.map((td) => td.textContent));
    const alpha = await cells(workerId(active.token));
    expect(alpha.slice(0, 7)).toEqual([
      workerId(active.token),
      "alpha-host",
      "4242",
      "4",
      "2",
      "",
      "active",
    ]);
    expect(alpha[7]).toMatch(/^\d+\.\ds ago$/);
    const beta = await cells(workerId(left.token));
    expect(beta.slice(1, 7)).toEqual(["beta-host", "4242", "2", "1", "1", "finished"]);
    const strange = await cells(workerId(odd.token));
    expect(strange[1]).toBe(hostile);
    expect(await page.locator("table.workers img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    // No token reaches the page.
    const html = await page.content();
    for (const token of [active.token, left.token, odd.token]) expect(html).not.toContain(token);

    // Executed by its workers: no Resume while it runs, and its progress is followed live.
    await expect(page.locator("p.meta.distributed").textContent()).resolves.toBe(
      "Distributed: 2 workers executing",
    );
    expect(await page.getByRole("button", { name: /Resume/ }).count()).toBe(0);
    await expect(page.locator(".summary .counts").textContent()).resolves.toMatch(/^3\/6 done/);
    const [key] = (await requireLeases(t.store).claim(runId, active.token, 1)).keys;
    await t.store.attempts.record(runId, active.token, [draft(key!)]);
    await expect
      .poll(() => page.locator(".summary .counts").textContent(), { timeout: 15_000 })
      .toMatch(/^4\/6 done/);
    await expect
      .poll(() => cells(workerId(active.token)).then((c) => c[4]), { timeout: 15_000 })
      .toBe("3");

    // Cancel asks every worker through the store: the active one sees it at its next heartbeat.
    await page.getByRole("button", { name: "Cancel" }).click();
    await expect
      .poll(() => page.locator(".notice").textContent(), { timeout: 15_000 })
      .toMatch(/Cancelling/);
    expect(await t.store.runs.heartbeat(runId, active.token)).toMatchObject({
      owned: true,
      cancelRequested: expect.stringMatching(/^requested by pid \d+/),
    });

    await close();
    expect(errors).toEqual([]);
  });
});
