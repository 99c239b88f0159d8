import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildResultSet, loadOutcomes } from "../src/evalport/build-result-set.js";
import { outcomePages } from "../src/evalport/outcome-pages.js";
import { applyReviews } from "../src/evalport/review-grades.js";
import { loadTrajectories } from "../src/evalport/trajectory.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli } from "./helpers/cli.js";

// `stet export` streams; test/fixtures/exports holds a store and what main's materialising export
// wrote for its runs in every format (see its README). The streamed export must write the same
// bytes, to stdout and to a file.
const FIXTURES = new URL("./fixtures/exports/", import.meta.url);
const RUNS = ["r_z3ah5xpf0z", "r_p0aqohdky7", "r_w0w2yfwuvc"];
const FORMATS = ["jsonl", "csv", "resultset", "junit", "html", "markdown"];

const dir = mkdtempSync(join(tmpdir(), "stet-export-fixtures-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh copy of the fixture store: an export must not depend on (or change) another's. */
function storeCopy(name: string): string {
  const path = join(dir, `${name}.sqlite`);
  copyFileSync(new URL("runs.sqlite", FIXTURES), path);
  return path;
}

/** The fixture's text; the Markdown's resume command names the store it was exported from. */
const expected = (file: string, store = "") =>
  readFileSync(new URL(file, FIXTURES), "utf8").replace("/tmp/stream-fx-copy.db", store);

describe("stet export writes what the materialising export wrote", () => {
  it.each(RUNS.flatMap((run) => FORMATS.map((format) => [run, format] as const)))(
    "%s as %s, to stdout and with -o",
    async (run, format) => {
      const store = storeCopy(`${run}-${format}`);
      const out = await runCli(["export", run, "--format", format, "--store", store]);
      expect(out.stderr).toBe("");
      expect(out.code).toBe(0);
      expect(out.stdout).toBe(expected(`${run}.${format}`, store));
      const file = join(dir, `${run}.${format}.out`);
      const written = await runCli([
        "export",
        run,
        "--format",
        format,
        "-o",
        file,
        "--store",
        store,
      ]);
      expect(written.code, written.stderr).toBe(0);
      expect(readFileSync(file, "utf8")).toBe(expected(`${run}.${format}`, store));
    },
  );

  it.each(["junit", "html"])("%s with --pass-threshold 0.5", async (format) => {
    const store = storeCopy(`t05-${format}`);
    const args = ["export", RUNS[0]!, "--format", format, "--pass-threshold", "0.5"];
    const out = await runCli([...args, "--store", store]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(expected(`${RUNS[0]}.t05.${format}`));
  });
});

describe("outcomePages", () => {
  it.each([1, 2, 3, 1_000])(
    "gives, %i samples a page, each key's outcome, journal and reviews as the whole-run reads do",
    async (pageSize) => {
      const store = openSqliteStore(storeCopy(`pages-${pageSize}`));
      try {
        for (const runId of RUNS) {
          const loaded = await loadOutcomes(store, runId);
          const reviewed = applyReviews(loaded.outcomes, await store.reviews.list(runId));
          const journal = await loadTrajectories(store, runId);
          const whole = reviewed.outcomes.map((a) => ({
            a,
            journal: journal(a),
            reviews: reviewed.reviewsOf(a),
          }));
          const paged = [];
          const ids = [];
          const options = { journal: true, reviews: true, samples: "whole", pageSize } as const;
          for await (const page of outcomePages(store, runId, "whole", options)) {
            expect(page.samples.length).toBeLessThanOrEqual(pageSize);
            for (const { sample, outcomes } of page.samples) {
              ids.push(sample.id);
              expect(sample.record).toEqual(loaded.samples.find((r) => r.sample.id === sample.id));
              for (const a of outcomes) {
                paged.push({ a, journal: page.journalOf(a), reviews: page.reviewsOf(a) });
              }
            }
          }
          expect(paged).toEqual(whole);
          expect(ids).toEqual(loaded.samples.map((r) => r.sample.id));
          // The journals and reviews are there to compare: the fixture has both.
          if (runId === RUNS[0]) {
            expect(paged.filter((p) => p.journal).length).toBeGreaterThan(10);
            expect(paged.filter((p) => p.reviews).length).toBe(4);
          }
        }
        // The ResultSet the server and `--output` still build whole is the fixture's too.
        const doc = await buildResultSet(store, RUNS[0]!);
        expect(`${JSON.stringify(doc, null, 2)}\n`).toBe(expected(`${RUNS[0]}.resultset`));
      } finally {
        await store.close();
      }
    },
  );
});
