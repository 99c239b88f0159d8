import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseJunit, type TestSuites } from "junit2json";
import { describe, expect, it } from "vitest";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { runCli } from "./helpers/cli.js";
import { closedPort } from "./helpers/closed-port.js";
import { perTest, questions } from "./helpers/eval-project.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";

const { project } = perTest();

/** The browser's DOM as the page.evaluate callbacks use it (the tests' tsconfig has no DOM lib). */
interface El {
  tagName: string;
  textContent: string | null;
  outerHTML: string;
  getAttribute(name: string): string | null;
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): Iterable<El>;
}
declare const DOMParser: new () => {
  parseFromString(text: string, type: string): El & { documentElement: El };
};

/** 100 samples; the solver answers 10 of them (every id ending in 3) wrong. */
const EVAL = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "reported",
  dataset: "./data.jsonl",
  solver: async (sample) => {
    // A wrong answer that quotes a credential from the environment: stored redacted.
    if (sample.id === "q003") return "wrong " + process.env.STET_REPORT_TOKEN;
    if (sample.id.endsWith("3")) return "wrong";
    return sample.target;
  },
  scorers: [scorers.exact()],
  concurrency: 8,
});
`;

/** Sample texts are user data: one of them is markup that must stay text everywhere. */
const XSS = `<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=1</script>`;
const data = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      id: `q${String(i).padStart(3, "0")}`,
      input: i === 7 ? XSS : `question ${i}`,
      target: i === 7 ? `${XSS} & "quoted"` : `answer ${i}`,
    }),
  ).join("\n");

const SECRET = "tok-reports-0123456789";

/** Kept after the run (gitignored): the HTML report's screenshot, for a person to look at. */
const SCREENSHOT = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "test-results",
  "report-failing.png",
);

async function finishedRun(env: NodeJS.ProcessEnv = {}) {
  const p = project({ "eval.mjs": EVAL, "data.jsonl": data(100) });
  const run = await runCli(["run", "eval.mjs", "--json"], {
    cwd: p.dir,
    env: { STET_REPORT_TOKEN: SECRET, ...env },
  });
  const runId = (JSON.parse(run.stdout.slice(run.stdout.indexOf("{\n"))) as { runId: string })
    .runId;
  return { p, run, runId };
}

async function exported(dir: string, runId: string, ...args: string[]) {
  const out = await runCli(["export", runId, ...args], { cwd: dir });
  expect(out.code, out.stderr).toBe(0);
  expect(out.stdout).not.toContain(SECRET);
  return out.stdout;
}

describe("stet export --format junit|html|markdown and GITHUB_STEP_SUMMARY (real CLI)", () => {
  it("a run appends its Markdown summary to $GITHUB_STEP_SUMMARY; export markdown prints the same table", async () => {
    const summaryFile = join(project({}).dir, "summary.md");
    writeFileSync(summaryFile, "earlier step\n");
    const { p, run, runId } = await finishedRun({ GITHUB_STEP_SUMMARY: summaryFile });
    expect(run.code, run.stderr).toBe(0);
    const summary = readFileSync(summaryFile, "utf8");
    expect(summary.startsWith("earlier step\n")).toBe(true); // appended, not replaced
    expect(summary).toContain(`### stet run \`${runId}\``);
    expect(summary).toContain("| scorer | mean | ± stderr | samples |");
    expect(summary).toMatch(/\| exact \| 0\.9000 \| 0\.0302 \| 100 \|/);
    expect(summary).toContain("**Status:** complete");
    expect(summary).not.toContain("stet resume"); // complete: nothing to resume
    expect(summary).not.toContain(SECRET);

    const markdown = await exported(p.dir, runId, "--format", "markdown");
    expect(markdown).toMatch(/\| exact \| 0\.9000 \| 0\.0302 \| 100 \|/);

    // A rescore changes scores: it appends its own summary (complete: no command to go on with).
    const rescore = await runCli(["rescore", runId], {
      cwd: p.dir,
      env: { GITHUB_STEP_SUMMARY: summaryFile },
    });
    expect(rescore.code, rescore.stderr).toBe(0);
    const after = readFileSync(summaryFile, "utf8");
    expect(after.startsWith(summary)).toBe(true);
    const added = after.slice(summary.length);
    expect(added).toContain(`### stet run \`${runId}\``);
    expect(added).toMatch(/\| exact \| 0\.9000 \| 0\.0302 \| 100 \|/);
    expect(added).not.toMatch(/stet (resume|rescore)/);
  });

  it("an endpoint stop writes a summary with the resume command; the resume appends its own, with the model", async () => {
    const CHAT = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "chatty",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL }),
  scorers: [scorers.includes()],
  concurrency: 2,
});
`;
    const p = project({ "eval.mjs": CHAT, "data.jsonl": questions(20) });
    const summaryFile = join(p.dir, "summary.md");
    const env = { GITHUB_STEP_SUMMARY: summaryFile, OPENAI_API_KEY: "sk-stet-test-key" };
    const down = `http://127.0.0.1:${await closedPort()}/v1`;
    const stopped = await runCli(["run", "eval.mjs", "--model", "gpt-4o-mini"], {
      cwd: p.dir,
      env: { ...env, MOCK_URL: down },
    });
    expect(stopped.code, stopped.stderr).toBe(1);
    const runId = /run (r_\S+)/.exec(stopped.stdout)![1]!;
    const first = readFileSync(summaryFile, "utf8");
    expect(first).toContain(`### stet run \`${runId}\` · chatty`);
    expect(first).toMatch(
      /\*\*Status:\*\* interrupted \(endpoint failed\) · \d+ keys left · model gpt\\-4o\\-mini/,
    );
    expect(first).toContain("connection refused");
    expect(first).toContain(`\`\`\`sh\nstet resume ${runId}\n\`\`\``);
    expect(first).not.toContain("sk-stet-test-key");

    const mock = await startMockOpenAI({ reply: ({ key }) => key.replace("question", "answer") });
    try {
      const resumed = await runCli(["resume", runId], {
        cwd: p.dir,
        env: { ...env, MOCK_URL: mock.url },
      });
      expect(resumed.code, resumed.stderr).toBe(0);
    } finally {
      await mock.close();
    }
    const both = readFileSync(summaryFile, "utf8");
    expect(both.startsWith(first)).toBe(true); // appended after the stop's summary
    const second = both.slice(first.length);
    expect(second).toContain(`### stet run \`${runId}\` · chatty`);
    expect(second).toContain("**Status:** completed · 20 of 20 keys scored");
    expect(second).toContain(" · model gpt\\-4o\\-mini"); // Markdown-escaped, as in the export
    expect(second).toMatch(/\| includes \| 1\.0000 \| 0\.0000 \| 20 \|/);
    expect(second).not.toContain("stet resume");
  }, 60_000);

  it("junit: 100 testcases, 10 failures, parsed by a real JUnit parser (junit2json) and by DOMParser; --pass-threshold moves the line", async () => {
    const { p, runId } = await finishedRun();
    const xml = await exported(p.dir, runId, "--format", "junit");
    // junit2json (xml2js underneath) reads JUnit the way CI reporters do.
    const junit = (await parseJunit(xml)) as TestSuites;
    expect(junit.testsuite).toHaveLength(1);
    const suite = junit.testsuite![0]!;
    expect(suite).toMatchObject({ name: "reported", tests: 100, failures: 10, errors: 0 });
    const testcases = suite.testcase ?? [];
    expect(testcases).toHaveLength(100);
    expect(new Set(testcases.map((c) => c.classname))).toEqual(new Set(["reported"]));
    expect(testcases.map((c) => c.name)).toEqual(
      Array.from({ length: 100 }, (_, i) => `q${String(i).padStart(3, "0")}#1`),
    );
    expect(testcases.filter((c) => c.failure).map((c) => c.name)).toEqual(
      Array.from({ length: 10 }, (_, i) => `q${String(i * 10 + 3).padStart(3, "0")}#1`),
    );
    expect(testcases.filter((c) => c.error)).toEqual([]);
    expect(testcases.every((c) => typeof c.time === "number" && c.time >= 0)).toBe(true);
    // Chromium's DOMParser: well-formed XML, attributes and escaping as a browser reads them.
    const { page, errors, close } = await openPage("about:blank");
    try {
      const parsed = await page.evaluate((text) => {
        const doc = new DOMParser().parseFromString(text, "application/xml");
        const parseError = doc.querySelector("parsererror")?.textContent ?? null;
        const suite = doc.querySelector("testsuites > testsuite");
        const cases = [...doc.querySelectorAll("testsuites > testsuite > testcase")];
        return {
          parseError,
          root: doc.documentElement.tagName,
          suite: Object.fromEntries(
            ["name", "tests", "failures", "errors", "skipped", "time"].map((a) => [
              a,
              suite?.getAttribute(a),
            ]),
          ),
          cases: cases.length,
          failures: cases
            .filter((c) => c.querySelector("failure"))
            .map((c) => c.getAttribute("name")),
          classnames: [...new Set(cases.map((c) => c.getAttribute("classname")))],
          times: cases.every((c) => /^\d+\.\d{3}$/.test(c.getAttribute("time") ?? "")),
          xssCase: cases.find((c) => c.getAttribute("name") === "q007#1")?.outerHTML ?? "",
          runId: doc.querySelector('property[name="stet.runId"]')?.getAttribute("value"),
        };
      }, xml);
      expect(parsed.parseError).toBeNull();
      expect(parsed).toMatchObject({
        root: "testsuites",
        suite: { name: "reported", tests: "100", failures: "10", errors: "0", skipped: "0" },
        cases: 100,
        classnames: ["reported"],
        times: true,
        runId,
      });
      expect(parsed.failures).toEqual(
        Array.from({ length: 10 }, (_, i) => `q${String(i * 10 + 3).padStart(3, "0")}#1`),
      );
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
    // A threshold of 0: no score is below it, so nothing fails.
    const lenient = await exported(p.dir, runId, "--format", "junit", "--pass-threshold", "0");
    expect(lenient).toMatch(/<testsuite name="reported" tests="100" failures="0" errors="0"/);
    const bad = await runCli(["export", runId, "--format", "junit", "--pass-threshold", "2"], {
      cwd: p.dir,
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--pass-threshold/);
  });

  it.skipIf(SKIP_BROWSER)(
    "html: self-contained, every sample id; in Chromium the chart renders, the table filters to the failing samples and sorts; markup in samples stays text",
    async () => {
      const { p, runId } = await finishedRun();
      const out = join(p.dir, "report.html");
      await exported(p.dir, runId, "--format", "html", "-o", out);
      const html = readFileSync(out, "utf8");
      expect(html).not.toContain(SECRET);
      expect(html).toContain(runId);
      for (let i = 0; i < 100; i++) expect(html).toContain(`"q${String(i).padStart(3, "0")}"`);
      // No URL to anywhere: no src/href attribute and no URL outside the samples' JSON block
      // (whose text, escaped, is checked in the page below); no raw sample markup at all.
      const markup = html.replace(/<script type="application\/json"[^>]*>[^<]*<\/script>/, "");
      expect(markup).not.toMatch(/\s(src|href)\s*=/i);
      expect(markup).not.toMatch(/https?:|\/\//);
      expect(html).not.toContain("<img");
      expect(html.match(/<script/g)).toHaveLength(2); // the JSON block and the page's script

      const { page, errors, close } = await openPage(`file://${out}`);
      try {
        await page.waitForSelector("table.samples tbody tr");
        expect(await page.$$eval("[src],[href]", (e) => e.length)).toBe(0);
        expect(await page.textContent("#run-id")).toBe(runId);
        // The chart: one panel for exact, 10 samples in the lowest bin and 90 in the highest.
        const bins = await page.$$eval("svg.score-chart .panel .bin", (gs) =>
          gs.map((g) => Number(g.getAttribute("data-count"))),
        );
        expect(bins).toEqual([10, 0, 0, 0, 0, 0, 0, 0, 0, 90]);
        expect(await page.locator("svg.score-chart rect").first().boundingBox()).not.toBeNull();
        expect(await page.$$eval("table.samples tbody tr", (rows) => rows.length)).toBe(100);

        await page.selectOption("#f-result", "fail");
        const failing = await page.$$eval("table.samples tbody tr", (rows) =>
          rows.map((r) => r.getAttribute("data-sample")),
        );
        expect(failing).toEqual(
          Array.from({ length: 10 }, (_, i) => `q${String(i * 10 + 3).padStart(3, "0")}`),
        );
        rmSync(SCREENSHOT, { force: true });
        mkdirSync(dirname(SCREENSHOT), { recursive: true });
        await page.screenshot({ path: SCREENSHOT, fullPage: true });
        const png = readFileSync(SCREENSHOT);
        expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
        expect(png.length).toBeGreaterThan(10_000);
        // Sorting by sample id twice reverses the order.
        await page.click("table.samples th >> text=sample");
        const sorted = await page.$$eval("table.samples tbody tr", (rows) =>
          rows.map((r) => r.getAttribute("data-sample")),
        );
        expect(sorted).toEqual([...failing].reverse());

        await page.selectOption("#f-result", "");
        await page.fill("#f-search", "onerror");
        const xss = page.locator('tr[data-sample="q007"]');
        expect(await xss.locator("td").nth(3).textContent()).toBe(XSS);
        expect(
          await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned),
        ).toBeUndefined();
        expect(await page.$$eval("table.samples img", (imgs) => imgs.length)).toBe(0);
        expect(errors).toEqual([]);
      } finally {
        await close();
      }
    },
  );

  it.skipIf(SKIP_BROWSER)(
    "html: the Content Security Policy runs only the page's own script and style (by hash), never an injected one",
    async () => {
      const { p, runId } = await finishedRun();
      const out = join(p.dir, "report.html");
      await exported(p.dir, runId, "--format", "html", "-o", out);
      const html = readFileSync(out, "utf8");
      const csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)![1]!;
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
      // A slip in escaping, simulated: markup injected into the body must stay inert.
      const tampered = join(p.dir, "tampered.html");
      writeFileSync(
        tampered,
        html.replace(
          "<section>",
          "<script>globalThis.__pwned = 1</script><style>body{display:none}</style><section>",
        ),
      );
      const { page, errors, close } = await openPage(`file://${tampered}`);
      try {
        // The page's own script ran: the samples table is drawn.
        await page.waitForSelector("table.samples tbody tr");
        expect(
          await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned),
        ).toBeUndefined();
        expect(await page.isVisible("table.samples")).toBe(true);
        // The refusals are the browser's CSP reports, not errors of the page's own code.
        expect(errors.every((e) => /Content Security Policy/i.test(e))).toBe(true);
      } finally {
        await close();
      }
    },
  );

  it("an incomplete run: errors by type and the resume command in the step summary; <error> in JUnit", async () => {
    const broken = EVAL.replace(
      'if (sample.id.endsWith("3")) return "wrong";',
      'if (sample.id === "q002") throw new Error("solver broke <here>");',
    );
    const p = project({ "eval.mjs": broken, "data.jsonl": data(5) });
    const summaryFile = join(p.dir, "summary.md");
    const run = await runCli(["run", "eval.mjs"], {
      cwd: p.dir,
      env: { GITHUB_STEP_SUMMARY: summaryFile },
    });
    expect(run.code).not.toBe(0);
    const runId = /run (r_\S+)/.exec(run.stdout)![1]!;
    const summary = readFileSync(summaryFile, "utf8");
    expect(summary).toContain("| solver | 1 |");
    expect(summary).toContain(`stet resume ${runId}`);
    expect(summary).toContain("4 of 5 keys scored");

    const xml = await exported(p.dir, runId, "--format", "junit");
    expect(xml).toMatch(/tests="5" failures="1" errors="1" skipped="0"/);
    expect(xml).toContain(
      '<error message="solver: solver broke &lt;here&gt;" type="solver">solver: solver broke &lt;here&gt;</error>',
    );
  });
});
