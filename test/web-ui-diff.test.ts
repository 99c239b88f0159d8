import { afterEach, describe, expect, it } from "vitest";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { runCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";

// The benchmark page's comparison of two runs, in a real `stet serve` and real Chromium.
const EVAL = `import { defineEval } from "stet";
const wrong = new Set((process.env.WRONG ?? "").split(",").filter(Boolean));
export default defineEval({
  name: "echo20",
  dataset: Array.from({ length: 20 }, (_, i) => ({ id: "s" + String(i).padStart(2, "0"), input: String(i), target: String(i) })),
  solver: (sample) => (wrong.has(sample.id) ? "nope" : String(sample.input)),
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;
const WRONG = ["s01", "s04", "s07", "s09", "s11", "s12", "s15", "s16", "s18", "s19"];

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe.skipIf(SKIP_BROWSER)("benchmark page: compare two runs (real Chromium)", () => {
  it("shows delta, interval, p and the regressed samples, linked to their sample views", async () => {
    const project = evalProject({ "echo.mjs": EVAL });
    cleanups.push(project.cleanup);
    const store = `${project.dir}/stet.db`;
    const ids: string[] = [];
    for (const env of [{}, { WRONG: WRONG.join(",") }]) {
      const r = await runCli(["run", "echo.mjs", "--store", store, "--json"], {
        cwd: project.dir,
        env,
      });
      expect(r.code).toBe(0);
      ids.push((JSON.parse(r.stdout) as { runId: string }).runId);
    }
    const [a, b] = ids as [string, string];
    const server = await startServe(["--store", store]);
    cleanups.push(() => server.proc.child.kill("SIGKILL"));

    const { page, errors, close } = await openPage(`${server.url}/#/benchmarks/echo20`);
    cleanups.push(close);
    // By default the newest run (B) is compared with the one before it (A).
    const row = page.locator('table.diff tr[data-scorer="exact"]');
    await row.waitFor();
    await expect(page.getByLabel("Baseline run").inputValue()).resolves.toBe(a);
    await expect(page.getByLabel("Compared run").inputValue()).resolves.toBe(b);
    await expect(row.locator(".delta").textContent()).resolves.toBe("-0.500");
    await expect(row.locator(".ci").textContent()).resolves.toMatch(/^\[-0\.\d+, -0\.\d+\]$/);
    await expect(row.locator(".p").textContent()).resolves.toBe("0.0020 significant regression");
    await expect(row.locator(".counts").textContent()).resolves.toBe("+0 −10 =10");
    const regressed = page.locator('p.regressed[data-scorer="exact"] a');
    await expect(regressed.allTextContents()).resolves.toEqual(WRONG);

    // Swapped, it is an improvement: no regression, no regressed samples.
    await page.getByLabel("Baseline run").selectOption(b);
    await page.getByLabel("Compared run").selectOption(a);
    await page.getByRole("button", { name: "Compare" }).click();
    await expect.poll(() => row.locator(".delta").textContent()).toBe("+0.500");
    expect(await page.locator("p.regressed").count()).toBe(0);

    // Back again; a regressed sample's link opens its sample view in run B.
    await page.getByLabel("Baseline run").selectOption(a);
    await page.getByLabel("Compared run").selectOption(b);
    await page.getByRole("button", { name: "Compare" }).click();
    await regressed.first().waitFor();
    await regressed.first().click();
    await expect.poll(() => page.url()).toContain(`#/runs/${b}/samples/s01`);
    await page.getByText("nope").first().waitFor();
    await close();
    expect(errors).toEqual([]);
  }, 60_000);
});

describe.skipIf(SKIP_BROWSER)("runs page: one request for the list (real Chromium)", () => {
  it("shows status, progress, score and cost of every run from GET /api/runs alone", async () => {
    const project = evalProject({ "echo.mjs": EVAL });
    cleanups.push(project.cleanup);
    const store = `${project.dir}/stet.db`;
    const ids: string[] = [];
    for (const env of [{}, { WRONG: WRONG.join(",") }, { WRONG: "s00" }]) {
      const r = await runCli(["run", "echo.mjs", "--store", store, "--json"], {
        cwd: project.dir,
        env,
      });
      ids.push((JSON.parse(r.stdout) as { runId: string }).runId);
    }
    const server = await startServe(["--store", store]);
    cleanups.push(() => server.proc.child.kill("SIGKILL"));

    // The listing's figures are the run detail's own.
    const listing = (await (await server.fetch("/api/runs")).json()) as {
      runs: { id: string; metrics: unknown; cost: unknown }[];
    };
    for (const run of listing.runs) {
      const detail = (await (await server.fetch(`/api/runs/${run.id}`)).json()) as {
        metrics: unknown;
        cost: { spent: unknown };
      };
      expect(run.metrics).toEqual(detail.metrics);
      expect(run.cost).toEqual({ spent: detail.cost.spent });
    }

    const { page, errors, close } = await openPage(`${server.url}/`);
    cleanups.push(close);
    const asked: string[] = [];
    page.on("request", (r) => {
      const path = new URL(r.url()).pathname;
      if (path.startsWith("/api/runs")) asked.push(path);
    });
    await page.reload();
    const rows = page.locator("tr[data-run]");
    await expect.poll(() => rows.count()).toBe(3);
    const scores = await Promise.all(
      ids.map((id) => page.locator(`tr[data-run="${id}"] td`).nth(4).textContent()),
    );
    expect(scores).toEqual(["exact 1.000", "exact 0.500", "exact 0.950"]);
    // Only the listing was asked (once per poll), never a run's detail.
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((path) => path !== "/api/runs")).toEqual([]);
    await close();
    expect(errors).toEqual([]);
  }, 60_000);
});
