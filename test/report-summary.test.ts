import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";

const { project } = perTest();

/**
 * 10,500 samples, over the HTML report's limit of 10,000 keys: every id ending in 03 is answered
 * wrong (105), every one ending in 007 errors (11), the rest are right.
 */
const N = 10_500;
const EVAL = `
import { defineEval } from "stet";
export default defineEval({
  name: "over-the-limit",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "s" + String(i).padStart(5, "0"), input: String(i), target: String(i) })),
  solver: (sample) => {
    if (sample.id.endsWith("007")) throw new Error("no answer for " + sample.id);
    return sample.id.endsWith("03") ? "wrong" : sample.input;
  },
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
  concurrency: 64,
});
`;

const ids = (end: string) =>
  Array.from({ length: N }, (_, i) => `s${String(i).padStart(5, "0")}`).filter((id) =>
    id.endsWith(end),
  );

describe.skipIf(SKIP_BROWSER)(
  "stet export --format html over its row limit (real CLI, Chromium)",
  () => {
    it("writes a summary: every count and the chart over all keys, the table the 1,000 worst", async () => {
      const p = project({ "eval.mjs": EVAL });
      const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir });
      expect(run.code, run.stderr).toBe(3); // some samples ended in error
      const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
      const out = join(p.dir, "report.html");
      const exported = await runCli(["export", runId, "--format", "html", "-o", out], {
        cwd: p.dir,
      });
      expect(exported.code, exported.stderr).toBe(0);
      const html = readFileSync(out, "utf8");
      const rows = (JSON.parse(html.match(/id="stet-data">([^<]*)</)![1]!) as { rows: unknown[][] })
        .rows;
      expect(rows).toHaveLength(1_000);

      const { page, errors, close } = await openPage(`file://${out}`);
      try {
        await page.waitForSelector("table.samples tbody tr");
        expect(await page.textContent("#summary-note")).toBe(
          "This run has 10,500 keys, over the report's limit of 10,000: the table holds the 1,000 " +
            "worst (errors first, then the lowest scores). stet export --format jsonl or csv has every key.",
        );
        // The header and the chart count every key, not only the table's.
        expect(await page.textContent("header")).toContain(
          "10,489 of 10,500 keys scored · 11 errored",
        );
        const bins = await page.$$eval("svg.score-chart .panel .bin", (gs) =>
          gs.map((g) => Number(g.getAttribute("data-count"))),
        );
        expect(bins).toEqual([105, 0, 0, 0, 0, 0, 0, 0, 0, 10_384]);
        // The worst keys are all there: every error, every failure, then the first passes.
        const shown = async (result: string) => {
          await page.selectOption("#f-result", result);
          return page.$$eval("table.samples tbody tr", (trs) =>
            trs.map((tr) => tr.getAttribute("data-sample")),
          );
        };
        expect(await shown("error")).toEqual(ids("007"));
        expect(await shown("fail")).toEqual(ids("03"));
        expect(await page.textContent("#count")).toBe("105 of 105 shown (1000 keys)");
        await page.selectOption("#f-result", "pass");
        expect(await page.textContent("#count")).toBe("200 of 884 shown (1000 keys)");
        expect(errors).toEqual([]);
      } finally {
        await close();
      }
    }, 120_000);
  },
);
