import Database from "better-sqlite3";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { evalProject, rawAttempts } from "./helpers/eval-project.js";
import { dumpDb } from "./helpers/db-dump.js";
import { until } from "./helpers/wait.js";
import { BACKUP_EVAL, exportsOf, sha256Of } from "./helpers/backup-eval.js";

// `stet backup` / `stet restore` through the real CLI (dist/: `npm run build` first).
const REPO = fileURLToPath(new URL("../", import.meta.url));

let project: ReturnType<typeof evalProject>;
let source: string;
const runs: string[] = [];

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, { cwd: project.dir, env });
}

beforeAll(async () => {
  if (!existsSync(join(REPO, "dist/cli/bin.js"))) throw new Error("run `npm run build` first");
  project = evalProject({ "backup.mjs": BACKUP_EVAL });
  source = join(project.dir, "source.db");
  for (const env of [{}, { SAMPLES: "30" }]) {
    const result = await cli(["run", "backup.mjs", "--store", source, "--json"], env);
    expect(result.code).toBe(0);
    runs.push((JSON.parse(result.stdout) as { runId: string }).runId);
  }
}, 60_000);
afterAll(() => project.cleanup());

describe("stet backup and restore (SQLite)", () => {
  it("round-trips every run byte for byte with the printed sha256", async () => {
    const file = join(project.dir, "round.bak");
    const backup = await cli(["backup", "--store", source, "-o", file]);
    expect(backup.code).toBe(0);
    const sha = /sha256 ([0-9a-f]{64})/.exec(backup.stdout)?.[1];
    expect(sha).toBe(sha256Of(file));

    const target = join(project.dir, "restored.db");
    const restore = await cli(["restore", file, "--sha256", sha!, "--store", target]);
    expect(restore.stderr).toBe("");
    expect(restore.code).toBe(0);
    expect(restore.stdout).toContain("restored 2 run(s)");
    expect(await exportsOf(cli, runs, target)).toEqual(await exportsOf(cli, runs, source));
  });

  it("refuses a wrong sha256, a newer schema and an existing target, and creates nothing", async () => {
    const file = join(project.dir, "refuse.bak");
    const backup = await cli(["backup", "--store", source, "-o", file, "--json"]);
    const { sha256 } = JSON.parse(backup.stdout) as { sha256: string };

    const target = join(project.dir, "never.db");
    const wrong = await cli(["restore", file, "--sha256", "0".repeat(64), "--store", target]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("sha256 mismatch");
    expect(wrong.stderr).toContain("nothing was restored");
    expect(existsSync(target)).toBe(false);

    const newer = join(project.dir, "newer.bak");
    copyFileSync(file, newer);
    const db = new Database(newer);
    db.prepare(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'x', 'now')",
    ).run();
    db.close();
    const future = await cli(["restore", newer, "--sha256", sha256Of(newer), "--store", target]);
    expect(future.code).toBe(1);
    expect(future.stderr).toContain("written by a newer stet (schema version 999)");
    expect(existsSync(target)).toBe(false);

    const before = dumpDb(source);
    const occupied = await cli(["restore", file, "--sha256", sha256, "--store", source]);
    expect(occupied.code).toBe(2);
    expect(occupied.stderr).toContain("already exists");
    expect(dumpDb(source)).toEqual(before);
  });

  it("takes a consistent copy while a run is writing", async () => {
    const busy = join(project.dir, "busy.db");
    const child = startCli(
      ["run", "backup.mjs", "--store", busy, "--concurrency", "4", "--run-id", "r_busy"],
      // 300 samples of 100 ms, 4 at a time: 7.5 s of writing, so the backup, however slowly
      // its process starts on a loaded machine, is taken while the run writes.
      { cwd: project.dir, env: { SAMPLES: "300", PAUSE_MS: "100" } },
    );
    // The file may exist before its tables do: not yet is "not yet".
    const committed = () => {
      try {
        return rawAttempts(busy).length;
      } catch {
        return 0;
      }
    };
    await until(() => committed() >= 20, "20 committed attempts");
    const file = join(project.dir, "busy.bak");
    const backup = await cli(["backup", "--store", busy, "-o", file, "--json"]);
    expect(backup.code).toBe(0);
    const finished = await child.done;
    expect(finished.code).toBe(0);
    const copied = rawAttempts(file).length;
    expect(copied).toBeGreaterThanOrEqual(20);
    expect(copied).toBeLessThan(300);

    const target = join(project.dir, "busy-restored.db");
    const { sha256 } = JSON.parse(backup.stdout) as { sha256: string };
    expect((await cli(["restore", file, "--sha256", sha256, "--store", target])).code).toBe(0);
    // Every copied attempt is whole, and the copy resumes to exactly the missing keys.
    for (const row of rawAttempts(target)) expect(row).toMatchObject({ status: "scored" });
    const resumed = await cli(["resume", "r_busy", "--store", target, "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      executed: 300 - copied,
      counts: { total: 300, scored: 300 },
    });
  }, 90_000);
});
