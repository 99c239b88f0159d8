// The report group: the HTML report of a 10,000-sample run: its size, its export, its opening in Chromium.
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { cli, median, project, report, reps, spread } from "../harness.mjs";

/** 10,000 samples of about 1 KB of text each (input, target, output); every tenth answer wrong. */
const reportEval = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "bench-report",
  dataset: "./data.jsonl",
  solver: (sample) => (sample.id.endsWith("3") ? "wrong " : "") + sample.target,
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

/**
 * `stet export --format html` of a 10,000-sample run: the file's size, the export's wall time,
 * and how long Chromium takes from navigation to the samples table drawn (the page's script has
 * parsed the rows, filtered, sorted and drawn the first page) and the chart present.
 */
export default async function reportGroup() {
  const filler = "lorem ipsum dolor sit amet ".repeat(14);
  let data = "";
  for (let i = 0; i < 10_000; i++) {
    const input = `question ${i}: ${filler}`;
    data += `${JSON.stringify({ id: `s${String(i).padStart(5, "0")}`, input, target: `answer ${i} ${filler.slice(0, 120)}` })}\n`;
  }
  const dir = project({ "eval.mjs": reportEval, "data.jsonl": data });
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.STET_CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  try {
    const run = await cli(["run", "eval.mjs", "--json"], dir);
    const runId = JSON.parse(run.stdout).runId;
    const file = join(dir, "report.html");
    const exports = [];
    for (let i = 0; i < reps; i++)
      exports.push((await cli(["export", runId, "--format", "html", "-o", file], dir)).wallMs);
    const mb = statSync(file).size / 1024 / 1024;
    report(
      "HTML report of 10,000 samples (~1 KB text each): file size",
      `${mb.toFixed(1)} MB`,
      "< 20 MB",
      mb < 20,
    );
    report(
      "`stet export --format html` of that run (CLI, incl. start-up)",
      spread(exports),
      "—",
      true,
    );
    const opens = [];
    for (let i = 0; i < reps; i++) {
      const page = await browser.newPage();
      const t0 = performance.now();
      await page.goto(`file://${file}`);
      await page.waitForSelector("table.samples tbody tr");
      await page.waitForSelector("svg.score-chart rect");
      opens.push(performance.now() - t0);
      await page.close();
    }
    report(
      "open that report in Chromium until table and chart are drawn",
      spread(opens),
      "< 2 s",
      median(opens) < 2_000,
    );
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
