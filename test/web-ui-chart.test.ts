import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { runCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";

// The run page draws the score chart of the HTML report (one pure module, core/score-chart.ts).
// Parsed on its own as image/svg+xml, an <svg> without its namespace is no SVG: its elements
// render as run-on text ("exact (n=30)0.0–0.1: 6…"), which a check of attributes alone misses.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * 30 samples. `exact`: every fifth answer is wrong (6 at 0, 24 at 1). `graded`: sample i scores
 * (i mod 11)/10, so every bin of the chart holds some samples.
 */
const EVAL = `import { defineEval } from "stet";
export default defineEval({
  name: "charted",
  dataset: Array.from({ length: 30 }, (_, i) => ({ id: "s" + String(i).padStart(2, "0"), input: String(i % 11), target: "t" + i })),
  solver: async (sample) => (Number(sample.id.slice(1)) % 5 === 0 ? "wrong" : sample.target),
  scorers: [
    function exact({ sample, output }) { return output === sample.target; },
    function graded({ sample }) { return Number(sample.input) / 10; },
  ],
});
`;

const SVG = "http://www.w3.org/2000/svg";
/** The chart in the HTML report, inline in its HTML. */
const REPORT_CHART = "svg.score-chart";
/** The chart on the run page: the figure's one child, whatever namespace it landed in. */
const UI_CHART = "figure.score-chart > :first-child";

/** Per panel of the chart under `root`: its scorer and its bins' counts, as drawn. */
interface DrawnChart {
  namespace: string | null;
  panels: { scorer: string | null; counts: number[]; texts: string[] }[];
}

/** What the browser drew at `chart`: every element must be SVG's for the chart to render. */
async function drawnChart(page: Page, chart: string): Promise<DrawnChart> {
  return page.locator(chart).evaluate((svg, ns) => {
    const elements = [svg, ...svg.querySelectorAll("*")];
    if (elements.some((e) => e.namespaceURI !== ns)) {
      return { namespace: elements.find((e) => e.namespaceURI !== ns)!.namespaceURI, panels: [] };
    }
    return {
      namespace: svg.namespaceURI,
      panels: [...svg.querySelectorAll("g.panel")].map((panel) => ({
        scorer: panel.getAttribute("data-scorer"),
        counts: [...panel.querySelectorAll("g.bin")].map((g) =>
          Number(g.getAttribute("data-count")),
        ),
        // The labels above the bars (counts > 0), as SVG text elements.
        texts: [...panel.querySelectorAll("g.bin > text")].map((t) => t.textContent ?? ""),
      })),
    };
  }, SVG);
}

describe.skipIf(SKIP_BROWSER)("web UI: the score chart (real server, real Chromium)", () => {
  it("draws the run's chart as SVG, with the HTML report's bins and counts", async () => {
    const p = evalProject({ "evals/charted.mjs": EVAL });
    cleanups.push(p.cleanup);
    const run = await runCli(["run", "evals/charted.mjs", "--json"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout.slice(run.stdout.indexOf("{\n"))) as { runId: string })
      .runId;
    const report = join(p.dir, "report.html");
    const exported = await runCli(["export", runId, "--format", "html", "-o", report], {
      cwd: p.dir,
    });
    expect(exported.code, exported.stderr).toBe(0);

    const expected = [
      { scorer: "exact", counts: [6, 0, 0, 0, 0, 0, 0, 0, 0, 24] },
      { scorer: "graded", counts: [3, 3, 3, 3, 3, 3, 3, 3, 2, 4] },
    ];
    const inReport = await openPage(`file://${report}`);
    cleanups.push(inReport.close);
    const reportChart = await drawnChart(inReport.page, REPORT_CHART);
    expect(reportChart.namespace).toBe(SVG);
    expect(reportChart.panels).toMatchObject(expected);

    const server = await startServe(["--store", p.db, "--evals", join(p.dir, "evals")]);
    cleanups.push(() => server.proc.child.kill("SIGKILL"));
    const { page, errors, close } = await openPage(`${server.url}/#/runs/${runId}`);
    cleanups.push(close);
    await page.locator(UI_CHART).waitFor();
    const uiChart = await drawnChart(page, UI_CHART);
    expect(uiChart.namespace).toBe(SVG);
    expect(uiChart.panels).toEqual(reportChart.panels);
    expect(uiChart.panels[0]!.texts).toEqual(["6", "24"]);

    // Drawn as graphics: a bar has a box on the page, and the chart has the report's size.
    for (const n of [6, 24]) {
      const bar = page.locator(
        `figure.score-chart g.panel[data-scorer="exact"] g.bin[data-count="${n}"] rect`,
      );
      const box = await bar.boundingBox();
      expect(box).not.toBeNull();
      expect(box!.height).toBeGreaterThan(0);
    }
    const size = (q: Page, chart: string) =>
      q.locator(chart).evaluate((svg) => {
        const { width, height } = svg.getBoundingClientRect();
        return { width, height };
      });
    expect(await size(page, UI_CHART)).toEqual(await size(inReport.page, REPORT_CHART));
    expect(errors).toEqual([]);
    expect(inReport.errors).toEqual([]);
  });
});
