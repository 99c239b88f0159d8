import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli, type CliResult } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { fillUp, mountExt4, mountSupport, mountTmpfs, type Mount } from "./helpers/mounts.js";
import { until } from "./helpers/wait.js";

// Real filesystems that break under a running `stet run`: a tmpfs that fills up and an ext4
// loop mount that turns read-only after an error. The attempts the store cannot take must reach
// a fallback file on another filesystem, come back with `stet import`, and not be bought again.
const N = 120;
const skip = mountSupport();
const skipped = skip === null ? "" : ` (skipped: ${skip})`;

const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "disk",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL }),
  scorers: [scorers.includes()],
  concurrency: 4,
});
`;

let mock: MockOpenAI;
let broken = false;
const mounts: Mount[] = [];
const dirs: string[] = [];
const project = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(N) });

beforeAll(async () => {
  mock = await startMockOpenAI({
    latencyMs: 60,
    // Requests that arrive once the disk is broken answer only after the writer has given up
    // on the store (its retries take ~8 s): they are attempts finishing after the failure.
    // Every reply echoes the request's Authorization header: the fallback file must not hold it.
    reply: ({ key, headers }) => echo(key, headers.authorization),
    respond: ({ key, headers }) =>
      broken ? { reply: echo(key, headers.authorization), latencyMs: 9_000 } : undefined,
  });
});
afterAll(async () => {
  for (const m of mounts) m.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  project.cleanup();
  await mock?.close();
});

const API_KEY = "sk-test-fallback-0123456789abcdef";
const env = () => ({ MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY });
const echo = (key: string, auth: string | undefined) => `${key} (you sent ${auth})`;
const sampleOf = (question: string) => `q${question.split(" ")[1]!.padStart(3, "0")}`;
const keysIn = (db: string) => rawAttempts(db).map((a) => a.sample_id);

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "stet-fallback-"));
  dirs.push(dir);
  return dir;
}

/** Starts a run on `db`, breaks its disk once some attempts are committed, waits for the end. */
async function runAndBreak(
  db: string,
  breakDisk: () => void,
  extraEnv: NodeJS.ProcessEnv,
): Promise<{ result: CliResult; runId: string }> {
  broken = false;
  mock.reset();
  const cli = startCli(["run", "eval.mjs", "--store", db], {
    cwd: project.dir,
    env: { ...env(), ...extraEnv },
  });
  const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
  await until(() => existsSync(db) && rawAttempts(db).length >= 8, "8 committed attempts");
  broken = true;
  breakDisk();
  const result = await cli.done;
  broken = false;
  return { result, runId };
}

/** The fallback file the run says it wrote, checked to be on another filesystem than `db`. */
function fallbackFile(result: CliResult, db: string, fallbackDir: string): string {
  expect(result.code, result.stderr).toBe(1);
  const path = result.stderr.match(/were written to (\S+\.fallback\.jsonl)/)?.[1];
  expect(path, result.stderr).toBeDefined();
  expect(path!.startsWith(`${fallbackDir}/`)).toBe(true);
  expect(statSync(path!).dev).not.toBe(statSync(db).dev);
  return path!;
}

/** Imports the fallback file, resumes, and checks no key was bought twice. */
async function restoreAndResume(db: string, runId: string, fallback: string, failed: CliResult) {
  const text = readFileSync(fallback, "utf8");
  expect(text).not.toContain(API_KEY);
  expect(text).toContain("you sent Bearer [redacted]");
  const lines = text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { runId: string; sampleId: string });
  const kept = lines.map((l) => l.sampleId);
  expect(lines.every((l) => l.runId === runId)).toBe(true);
  expect(new Set(kept).size).toBe(kept.length);
  const stored = keysIn(db);
  expect(kept.filter((k) => stored.includes(k))).toEqual([]);
  // Every request the failed run made is in the store or in the fallback file.
  const requested = Object.keys(mock.counts()).map(sampleOf).sort();
  expect([...stored, ...kept].sort()).toEqual(requested);
  // The failed run counted the fallback's attempts in its spend and said how to restore them.
  expect(failed.stderr).toMatch(
    new RegExp(
      `counting ${kept.length} attempts not in the store \\(${kept.length} in the fallback file`,
    ),
  );
  expect(failed.stderr).toContain(`  stet import ${fallback} --into ${runId} --store ${db}\n`);
  expect(failed.stderr).toContain(`  stet resume ${runId} --store ${db}\n`);

  const imported = await runCli(["import", fallback, "--into", runId, "--store", db], {
    cwd: project.dir,
  });
  expect(imported.code, imported.stderr).toBe(0);
  expect(imported.stdout).toContain(`imported ${kept.length} result(s) into run ${runId}`);

  const before = mock.counts();
  const resumed = await runCli(["resume", runId, "--store", db], { cwd: project.dir, env: env() });
  expect(resumed.code, resumed.stderr).toBe(0);
  const after = mock.counts();
  for (const question of Object.keys(before)) expect(after[question]).toBe(before[question]);
  // Resume bought exactly the keys never requested; every key was requested once in all.
  expect(Object.keys(after).length).toBe(N);
  expect(Object.values(after).every((n) => n === 1)).toBe(true);
  const final = keysIn(db);
  expect(final).toHaveLength(N);
  expect(new Set(final).size).toBe(N);
  // The run's totals count the restored attempts (10 input tokens a request): paid for once.
  expect(resumed.stdout).toContain(`tokens   1,200 in · 600 out (all attempts)`);
  expect(resumed.stdout).toContain("status   completed");
}

describe("a store whose disk breaks mid-run", () => {
  it.skipIf(skip !== null)(
    `a full tmpfs: the attempts go to STET_FALLBACK_DIR, import restores them, resume buys none again${skipped}`,
    async () => {
      const disk = mountTmpfs(16 * 1024 * 1024);
      mounts.push(disk);
      const fallbackDir = tempDir();
      const db = join(disk.dir, "stet.db");
      let filler = "";
      const summaryFile = join(tempDir(), "summary.md");
      const { result, runId } = await runAndBreak(db, () => (filler = fillUp(disk.dir)), {
        STET_FALLBACK_DIR: fallbackDir,
        GITHUB_STEP_SUMMARY: summaryFile,
      });
      expect(result.stderr).toContain("database or disk is full");
      const fallback = fallbackFile(result, db, fallbackDir);
      // The step summary says why the run stopped and gives import, then resume.
      const summary = readFileSync(summaryFile, "utf8");
      expect(summary).toContain(`### stet run \`${runId}\` · disk`);
      expect(summary).toContain("**Status:** interrupted (store unwritable)");
      expect(summary).toContain(`stet import ${fallback} --into ${runId} --store ${db}\n`);
      expect(summary).toContain(`\`\`\`sh\nstet resume ${runId} --store ${db}\n\`\`\``);
      expect(summary.indexOf("stet import")).toBeLessThan(summary.indexOf("stet resume"));
      expect(summary).not.toContain(API_KEY);
      rmSync(filler);
      await restoreAndResume(db, runId, fallback, result);
    },
    90_000,
  );

  it.skipIf(skip !== null)(
    `an ext4 mount turned read-only by an error: the attempts reach the state directory${skipped}`,
    async () => {
      const disk = mountExt4(32);
      mounts.push(disk);
      const state = tempDir();
      const db = join(disk.dir, "stet.db");
      const { result, runId } = await runAndBreak(db, disk.fail, { XDG_STATE_HOME: state });
      const fallback = fallbackFile(result, db, join(state, "stet"));
      disk.repair();
      await restoreAndResume(db, runId, fallback, result);
    },
    90_000,
  );

  it.skipIf(skip !== null)(
    `nothing writable anywhere: the lost keys and their spend are named on stderr${skipped}`,
    async () => {
      const disk = mountTmpfs(16 * 1024 * 1024);
      mounts.push(disk);
      const db = join(disk.dir, "stet.db");
      const inside = (name: string) => join(disk.dir, name);
      const { result } = await runAndBreak(db, () => fillUp(disk.dir), {
        STET_FALLBACK_DIR: inside("fallback"),
        XDG_STATE_HOME: inside("state"),
        HOME: inside("home"),
        TMPDIR: inside("tmp"),
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).not.toMatch(/were written to/);
      const lost = result.stderr.match(
        /^lost +(\d+) attempts could be written nowhere .*?\): (.+)$/m,
      );
      expect(lost, result.stderr).not.toBeNull();
      const keys = lost![2]!.split(", ").sort();
      expect(keys.length).toBe(Number(lost![1]));
      const requested = Object.keys(mock.counts()).map(sampleOf);
      const stored = keysIn(db);
      expect(keys).toEqual(requested.filter((k) => !stored.includes(k)).sort());
      // Their spend: 10 input and 5 output tokens a request.
      expect(lost![0]).toContain(`${keys.length * 10} in · ${keys.length * 5} out`);
      for (const dir of ["fallback", "state/stet", "home/.local/state/stet", "tmp/stet"]) {
        if (existsSync(inside(dir))) expect(readdirSync(inside(dir))).toEqual([]);
      }
      expect(readdirSync(disk.dir).filter((f) => f.endsWith(".jsonl"))).toEqual([]);
    },
    90_000,
  );
});
