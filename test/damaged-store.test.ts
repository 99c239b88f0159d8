import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  readFileSync,
  readdirSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./helpers/postgres.js";

// A store file that is damaged, empty or another application's: every command names the
// problem once, exits non-zero, and leaves the file (and its directory) exactly as it was.
const EVAL = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "damaged",
  dataset: "./data.jsonl",
  solver: async (sample) => String(sample.input),
  scorers: [scorers.exact()],
});
`;

const project = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(300) });
let good = "";
let runId = "";
beforeAll(async () => {
  good = join(project.dir, "good.db");
  const run = await runCli(["run", "eval.mjs", "--store", good], { cwd: project.dir });
  expect(run.code, run.stderr).toBe(0);
  runId = run.stdout.match(/^run (r_\w+)/)![1]!;
  expect(existsSync(`${good}-wal`)).toBe(false); // closed cleanly: the database is whole
});
afterAll(() => project.cleanup());

/** A store file's bytes, mtime and the files beside it: what a refused command must not change. */
function snapshot(path: string) {
  const bytes = readFileSync(path);
  return {
    sha256: createHash("sha256").update(bytes).digest("hex"),
    size: bytes.length,
    mtimeMs: statSync(path).mtimeMs,
    siblings: readdirSync(project.dir).filter((f) => f.startsWith(`${path.split("/").pop()}-`)),
  };
}

let n = 0;
function storeFile(make: (path: string) => void): string {
  const path = join(project.dir, `store-${++n}.db`);
  make(path);
  return path;
}

const commands = (id: string) => [["list"], ["show", id], ["export", id], ["run", "eval.mjs"]];

describe("a damaged store file", () => {
  it.each([
    [
      "cut short (a full disk or a partial copy)",
      (p: string) => {
        copyFileSync(good, p);
        truncateSync(p, Math.floor(statSync(p).size / 2));
      },
      /it is cut short: \d+ bytes where its header says \d+/,
    ],
    [
      "garbage bytes",
      (p: string) => writeFileSync(p, Buffer.alloc(8192, 0x5a)),
      /it is not a SQLite database/,
    ],
    [
      "pages overwritten in the middle",
      (p: string) => {
        copyFileSync(good, p);
        const bytes = readFileSync(p);
        bytes.fill(0xff, 4096 * 2, bytes.length - 4096);
        writeFileSync(p, bytes);
      },
      /database disk image is malformed/,
    ],
  ])(
    "%s: one error naming the file, recovery advice, the file untouched",
    async (_what, make, problem) => {
      const path = storeFile(make);
      const before = snapshot(path);
      for (const args of commands(runId)) {
        const result = await runCli([...args, "--store", path], { cwd: project.dir });
        expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(1);
        const lines = result.stderr.trimEnd().split("\n");
        // One error: its first line names the file once and says what is wrong; then the advice.
        expect(lines.filter((l) => l.startsWith("stet:"))).toHaveLength(1);
        expect(lines[0]!.split(path)).toHaveLength(2);
        expect(lines[0]).toContain(`${path} is not an intact stet store`);
        expect(lines[0]).toMatch(problem);
        expect(result.stderr).toContain(`sqlite3 ${path} "PRAGMA integrity_check"`);
        expect(result.stderr).toMatch(/restore the file from a copy/);
        expect(snapshot(path)).toEqual(before);
      }
    },
  );
});

describe("a file that is not a stet store", () => {
  it("list, show and export refuse an empty file, which stays 0 bytes", async () => {
    const path = storeFile((p) => writeFileSync(p, ""));
    for (const args of commands("r_x").slice(0, 3)) {
      const result = await runCli([...args, "--store", path], { cwd: project.dir });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toBe(
        `stet: ${path} is empty, not a stet store yet (stet run makes one of it); nothing was written to it\n`,
      );
      expect(snapshot(path)).toMatchObject({ size: 0, siblings: [] });
    }
    // Starting a run is what makes a store of an empty file (as of a missing one).
    const run = await runCli(["run", "eval.mjs", "--store", path], { cwd: project.dir });
    expect(run.code, run.stderr).toBe(0);
    const listed = await runCli(["list", "--json", "--store", path], { cwd: project.dir });
    expect(JSON.parse(listed.stdout)).toHaveLength(1);
  });

  it.each([
    ["a rollback-journal database", "DELETE"],
    ["a WAL database", "WAL"],
  ])(
    "every command refuses another application's SQLite database (%s), unchanged",
    async (_what, mode) => {
      const path = storeFile((p) => {
        const db = new Database(p);
        db.pragma(`journal_mode = ${mode}`);
        db.exec(
          "CREATE TABLE schema_migrations (version TEXT PRIMARY KEY); CREATE TABLE users (id)",
        );
        db.close();
      });
      const before = snapshot(path);
      for (const args of commands("r_x")) {
        const result = await runCli([...args, "--store", path], { cwd: project.dir });
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toBe(
          `stet: ${path} is not a stet store: it is a SQLite database with tables that are not stet's ` +
            "(schema_migrations, users); stet leaves it as it is. Give stet a file of its own.\n",
        );
        expect(snapshot(path)).toEqual(before);
      }
    },
  );

  it("where there is no store yet, list says so and show refuses, creating nothing", async () => {
    const path = join(project.dir, "nowhere", "stet.db");
    const list = await runCli(["list", "--store", path], { cwd: project.dir });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toBe(`no runs in ${path} (no store there yet)\n`);
    const show = await runCli(["show", "r_x", "--store", path], { cwd: project.dir });
    expect(show.code).toBe(1);
    expect(show.stderr).toBe(
      `stet: no store at ${path}: no run was started with it (nothing was created)\n`,
    );
    expect(existsSync(join(project.dir, "nowhere"))).toBe(false);
  });
});

describe.skipIf(SKIP_POSTGRES)("a PostgreSQL schema without stet's tables", () => {
  it("list, show and export refuse it and create nothing", async () => {
    const { schema, drop } = testSchema();
    onTestFinished(drop);
    const url = new URL(TEST_POSTGRES_URL);
    url.searchParams.set("schema", schema);
    for (const args of commands("r_x").slice(0, 3)) {
      const result = await runCli([...args, "--store", url.toString()], { cwd: project.dir });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain(`no stet store at`);
      expect(result.stderr).toContain(`(schema ${schema}): it has no stet tables`);
    }
    const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await client.connect();
    try {
      const { rows } = await client.query(
        "SELECT 1 FROM information_schema.schemata WHERE schema_name = $1",
        [schema],
      );
      expect(rows).toEqual([]);
    } finally {
      await client.end();
    }
  });
});
