import Database from "better-sqlite3";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildResultSet, loadOutcomes } from "../src/evalport/build-result-set.js";
import { outcomePages } from "../src/evalport/outcome-pages.js";
import { prepareResultSet, writeResultSet } from "../src/evalport/write-result-set.js";
import { createApp } from "../src/server/create-app.js";
import { createRedactor } from "../src/server/redact.js";
import { applyReviews } from "../src/evalport/review-grades.js";
import { loadTrajectories } from "../src/evalport/trajectory.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchemaPool } from "./helpers/postgres.js";

// `stet export` streams; test/fixtures/exports holds a store and what main's materialising export
// wrote for its runs in every format (see its README). The streamed export must write the same
// bytes, to stdout and to a file, but for what reports gained since: the run's retries
// (`withRetries`).
const FIXTURES = new URL("./fixtures/exports/", import.meta.url);
const RUNS = ["r_z3ah5xpf0z", "r_p0aqohdky7", "r_w0w2yfwuvc"];
const FORMATS = ["jsonl", "csv", "resultset", "junit", "html", "markdown"];

/** The fixture eval's samples (test/fixtures/exports/README.md). */
const FIXTURE_DATA = [
  { id: "ok1", input: "one", target: "1" },
  { id: "wrong1", input: "two", target: "2" },
  { id: "flaky", input: "three", target: "3" },
  { id: "broken", input: "four", target: "4" },
  { id: "slow", input: "five", target: "5" },
  { id: "Zeta", input: '<b>six</b> & "quoted"', target: "six é ✓" },
  { id: "éclair", input: { nested: [1, 2] }, target: "7", metadata: { k: "v" } },
  { id: "ok2", input: "eight", target: "8" },
]
  .map((s) => JSON.stringify(s))
  .join("\n");

const { project } = perTest();

/** Each outcome of a run with its journal and reviews, as the whole-run reads give them. */
async function wholeRun(store: Store, runId: string) {
  const loaded = await loadOutcomes(store, runId);
  const reviewed = applyReviews(loaded.outcomes, await store.reviews.list(runId));
  const journal = await loadTrajectories(store, runId);
  return reviewed.outcomes.map((a) => ({
    a,
    journal: journal(a),
    reviews: reviewed.reviewsOf(a),
  }));
}

/** The same, as `outcomePages` gives them `pageSize` samples at a time. */
async function pagedRun(store: Store, runId: string, pageSize: number) {
  const paged = [];
  const options = { journal: true, reviews: true, pageSize } as const;
  for await (const page of outcomePages(store, runId, "whole", options)) {
    expect(page.samples.length).toBeLessThanOrEqual(pageSize);
    for (const { outcomes } of page.samples) {
      for (const a of outcomes) {
        paged.push({ a, journal: page.journalOf(a), reviews: page.reviewsOf(a) });
      }
    }
  }
  return paged;
}

const dir = mkdtempSync(join(tmpdir(), "stet-export-fixtures-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh copy of the fixture store: an export must not depend on (or change) another's. */
function storeCopy(name: string): string {
  const path = join(dir, `${name}.sqlite`);
  copyFileSync(new URL("runs.sqlite", FIXTURES), path);
  return path;
}

/** The fixture's text; the Markdown's resume command names the store it was exported from. */
const fixture = (file: string, store = "") =>
  readFileSync(new URL(file, FIXTURES), "utf8").replace("/tmp/stream-fx-copy.db", store);

/** A run's retries as its stored rows give them, and each key's outcome's attempt and retries. */
interface RowRetries {
  total: number;
  keysRetried: number;
  unrecorded: number;
  /** By `sampleId#epoch`: the key's last attempt, its outcome (no fixture run re-ran a key). */
  outcomes: Map<string, { attempt: number; retries: number }>;
}

/** Read straight from the store's tables, not through stet's reads. */
function rowRetries(store: string, runId: string): RowRetries {
  const db = new Database(store, { readonly: true, fileMustExist: true });
  try {
    const attempts = db
      .prepare(
        `SELECT sample_id, epoch, attempt, retries, provenance_kind FROM attempts
          WHERE run_id = ? ORDER BY sample_id, epoch, attempt`,
      )
      .all(runId) as {
      sample_id: string;
      epoch: number;
      attempt: number;
      retries: number | null;
      provenance_kind: string;
    }[];
    const scorings = db.prepare(`SELECT retries FROM scorings WHERE run_id = ?`).all(runId) as {
      retries: number | null;
    }[];
    const executed = attempts.filter((a) => a.provenance_kind === "executed");
    const outcomes = new Map<string, { attempt: number; retries: number }>();
    for (const a of attempts) {
      outcomes.set(`${a.sample_id}#${a.epoch}`, { attempt: a.attempt, retries: a.retries ?? 0 });
    }
    return {
      total: [...executed, ...scorings].reduce((sum, r) => sum + (r.retries ?? 0), 0),
      keysRetried: [...outcomes.values()].filter((o) => o.attempt > 1).length,
      unrecorded: executed.filter((a) => a.retries === null).length,
      outcomes,
    };
  } finally {
    db.close();
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * The old build's report with what reports gained since, at its place: the run's retries in the
 * Markdown (after the spend, a paragraph of its own) and the HTML header (after the spend line);
 * in JUnit the suite's `stet.retries` and `stet.keysRetried` (after `stet.limited`) and, on a test
 * case whose outcome is not the key's first attempt or re-sent requests, `stet.attempt` and
 * `stet.retries` (after a `stet.limit`, in a `<properties>` block of their own otherwise).
 */
function withRetries(format: string, text: string, r: RowRetries): string {
  expect(r.unrecorded).toBe(0); // The fixture's build counted retries: the line has no third part.
  const words =
    `${plural(r.total, "request")} re-sent (all attempts) · ` +
    `${plural(r.keysRetried, "key")} needed more than one attempt`;
  if (format === "markdown")
    return once(text, /^\*\*Spend:\*\* .*\n/m, `$&\n**Retries:** ${words}\n`);
  if (format === "html") {
    return once(
      text,
      /^<p class="meta">spend: .*<\/p>(?=<\/header>)/m,
      `$&\n<p class="meta">retries: ${words}</p>`,
    );
  }
  if (format !== "junit") return text;
  const suite = once(
    text,
    /^ {6}<property name="stet\.limited" value="\d+"\/>\n/m,
    `$&      <property name="stet.retries" value="${r.total}"/>\n` +
      `      <property name="stet.keysRetried" value="${r.keysRetried}"/>\n`,
  );
  const caseOpen =
    /^( {4}<testcase name="([^"]*)"[^>]*?)(\/?)>\n((?: {6}<properties>\n(?: {8}<property .*\n)*)?)/gm;
  return suite.replace(caseOpen, (all, head: string, key: string, empty: string, block: string) => {
    const o = r.outcomes.get(key);
    const added =
      (o && o.attempt > 1 ? `        <property name="stet.attempt" value="${o.attempt}"/>\n` : "") +
      (o && o.retries > 0 ? `        <property name="stet.retries" value="${o.retries}"/>\n` : "");
    if (added === "") return all;
    if (block !== "") return `${head}>\n${block}${added}`;
    const properties = `${head}>\n      <properties>\n${added}      </properties>\n`;
    return empty ? `${properties}    </testcase>\n` : properties;
  });
}

/** `text` with `pattern`'s one match replaced: a fixture without it fails here, not later. */
function once(text: string, pattern: RegExp, replacement: string): string {
  expect(text).toMatch(pattern);
  return text.replace(pattern, replacement);
}

/** What the current build writes for a fixture run exported from the store copy `store`. */
const expected = (store: string, run: string, format: string, variant = "") =>
  withRetries(format, fixture(`${run}${variant}.${format}`, store), rowRetries(store, run));

describe("stet export writes what the materialising export wrote", () => {
  it.each(RUNS.flatMap((run) => FORMATS.map((format) => [run, format] as const)))(
    "%s as %s, to stdout and with -o",
    async (run, format) => {
      const store = storeCopy(`${run}-${format}`);
      const out = await runCli(["export", run, "--format", format, "--store", store]);
      expect(out.stderr).toBe("");
      expect(out.code).toBe(0);
      expect(out.stdout).toBe(expected(store, run, format));
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
      expect(readFileSync(file, "utf8")).toBe(expected(store, run, format));
    },
  );

  it("reads the runs' retries from their rows as the fixture's README says them", () => {
    const store = storeCopy("retries");
    const figures = RUNS.map((run) => {
      const r = rowRetries(store, run);
      const again = [...r.outcomes].filter(([, o]) => o.attempt > 1 || o.retries > 0);
      return { run, total: r.total, keysRetried: r.keysRetried, unrecorded: r.unrecorded, again };
    });
    // `flaky` errors once then scores, `broken` errors twice (the eval's `retries: 1`); the
    // solver makes no model request, so none was re-sent.
    const second = { attempt: 2, retries: 0 };
    expect(figures).toEqual([
      {
        run: RUNS[0],
        total: 0,
        keysRetried: 4,
        unrecorded: 0,
        again: ["broken#1", "broken#2", "flaky#1", "flaky#2"].map((key) => [key, second]),
      },
      { run: RUNS[1], total: 0, keysRetried: 0, unrecorded: 0, again: [] },
      { run: RUNS[2], total: 0, keysRetried: 0, unrecorded: 0, again: [] },
    ]);
  });

  it.each(["junit", "html"])("%s with --pass-threshold 0.5", async (format) => {
    const store = storeCopy(`t05-${format}`);
    const args = ["export", RUNS[0]!, "--format", format, "--pass-threshold", "0.5"];
    const out = await runCli([...args, "--store", store]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(expected(store, RUNS[0]!, format, ".t05"));
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
        // buildResultSet (the library's) gives the fixture's ResultSet too.
        const doc = await buildResultSet(store, RUNS[0]!);
        expect(`${JSON.stringify(doc, null, 2)}\n`).toBe(fixture(`${RUNS[0]}.resultset`));
        // The API streams it compact and redacted: `c.json(redact(doc))`, byte for byte.
        const secret = "six é ✓";
        expect(JSON.stringify(doc)).toContain(secret);
        const app = createApp({ store, secrets: [secret] });
        const res = await app.request(`/api/runs/${RUNS[0]}/resultset`);
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toBe("application/json");
        const redacted = JSON.stringify(createRedactor([secret])(doc));
        expect(redacted).not.toContain(secret);
        expect(await res.text()).toBe(redacted);
        let compact = "";
        const coverage = await prepareResultSet(store, (await store.runs.get(RUNS[0]!))!);
        await writeResultSet(store, coverage, async (text) => void (compact += text), {
          style: "compact",
        });
        expect(compact).toBe(JSON.stringify(doc));
      } finally {
        await store.close();
      }
    },
  );
});

describe.skipIf(SKIP_POSTGRES)("the streamed export on PostgreSQL", () => {
  it("pages the fixture eval's run (retries, errors, a limit, journals, reviews, a rescore) as its whole-run reads give it, and writes its ResultSet as buildResultSet does", async () => {
    const p = project({
      "eval.mjs": readFileSync(new URL("export-fixture.eval.mjs", FIXTURES), "utf8"),
      "data.jsonl": FIXTURE_DATA,
      "reviews.csv": "sample_id,epoch,verdict,note\nok1,1,pass,fine\nwrong1,2,fail,\n",
    });
    const { url } = testSchemaPool();
    const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      runCli([...args, "--store", url], { cwd: p.dir, env });
    const run = await cli(["run", "eval.mjs", "--json"]);
    expect(run.code, run.stderr).toBe(3); // `broken` errors every time
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
    expect(
      (await cli(["review", runId, "--import", "reviews.csv"], { STET_REVIEWER: "ada" })).code,
    ).toBe(0);
    expect((await cli(["rescore", runId, "--eval", "eval.mjs"], { TWO: "1" })).code).toBe(3);
    const schema = new URL(url).searchParams.get("schema")!;
    const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
    try {
      const whole = await wholeRun(store, runId);
      expect(whole.filter((w) => w.journal).length).toBe(16);
      expect(whole.filter((w) => w.reviews).length).toBe(2);
      for (const pageSize of [1, 3, 1_000]) {
        expect(await pagedRun(store, runId, pageSize)).toEqual(whole);
      }
      const exported = await cli(["export", runId, "--format", "resultset"]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout).toBe(
        `${JSON.stringify(await buildResultSet(store, runId), null, 2)}\n`,
      );
    } finally {
      await store.close();
    }
  }, 120_000);
});
