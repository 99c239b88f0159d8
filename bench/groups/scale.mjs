// The scale group (issue 34): a run of 1,000,000 keys (STET_BENCH_SCALE sets another count, e.g.
// 10000000) through the CLI, and what each read of it costs: wall and peak RSS of the run, the
// resume plan of the complete run, `stet show`, `stet export --format jsonl`, `stet diff` of the
// run with itself and `stet review` of two keys, beside the floor the read paths are held
// against: the store's raw scan (a SELECT of every attempt row), and `stet show` again with the
// run's failed tenth asked to re-run (`--rerun-failed`, SIGKILLed early); then a second run SIGKILLed a
// quarter of the way and its `stet resume`, which executes the rest from the snapshot's pages, and
// a distributed run of the same file (its creator the one worker), and `stet plan --reuse` and
// `stet run --reuse` of the first run with 1 % of the samples edited. One repetition each (minutes
// at this size); run only when named:
// `npm run bench -- scale`.
import { spawn } from "node:child_process";
import { appendFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { BIN, cli, fmt, jsonl, project, report } from "../harness.mjs";

const N = Number(process.env.STET_BENCH_SCALE ?? 1_000_000);

/**
 * The bench's rows (`jsonl`), every 10th sample's target another than its input, so its key
 * fails `exact` (what `--rerun-failed` asks again). Rows 0, 10, 20…: the `--reuse` step edits
 * others (99, 199…).
 */
function rows(n, from = 0) {
  return jsonl(n, from).replace(/"target":"question (\d*0)"/g, '"target":"answer $1"');
}

const instantEval = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "bench-scale",
  dataset: "./data.jsonl",
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 64,
});
`;

const mb = (kb) => `${Math.round(kb / 1024)} MB`;
const perSecond = (rows, ms) => `${Math.round((rows / ms) * 1000).toLocaleString()} rows/s`;

/** The floor: every attempt row of the run read through better-sqlite3 (ms). */
function rawScan(db, runId) {
  const store = new Database(db, { readonly: true });
  try {
    const t0 = performance.now();
    let rows = 0;
    for (const _row of store.prepare("SELECT * FROM attempts WHERE run_id = ?").iterate(runId)) {
      rows++;
    }
    return { ms: performance.now() - t0, rows };
  } finally {
    store.close();
  }
}

/** The run's stored attempts, read while it is written (0 before its tables exist). */
function attemptsOf(db, runId) {
  try {
    const store = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return store.prepare("SELECT count(*) AS n FROM attempts WHERE run_id = ?").get(runId).n;
    } finally {
      store.close();
    }
  } catch {
    return 0;
  }
}

/** `stet run --run-id <runId>` SIGKILLed once more than `at` attempts are stored; their count. */
function killedRun(dir, runId, at) {
  return killed(dir, ["run", "eval.mjs", "--run-id", runId], runId, at);
}

/** `stet <args>` (a run or a resume of `runId`) SIGKILLed once more than `at` attempts are stored. */
async function killed(dir, args, runId, at) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, stdio: "ignore" });
  const ended = new Promise((resolve) => child.on("close", resolve));
  const db = join(dir, ".stet/stet.db");
  while (attemptsOf(db, runId) <= at) {
    if (child.exitCode !== null) throw new Error(`the run to kill ended (${child.exitCode})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  await ended;
  return attemptsOf(db, runId);
}

export default async function scale() {
  const n = N.toLocaleString();
  const dir = project({ "eval.mjs": instantEval, "data.jsonl": "" });
  // Written 100,000 rows at a time: 10,000,000 rows are past V8's longest string.
  for (let from = 0; from < N; from += 100_000) {
    appendFileSync(join(dir, "data.jsonl"), rows(Math.min(N, from + 100_000), from));
  }
  try {
    const run = await cli(["run", "eval.mjs", "--json"], dir);
    const runId = JSON.parse(run.stdout).runId;
    report(
      `${n} keys, instant solver, SQLite, concurrency 64 (CLI): wall, peak RSS`,
      `${fmt(run.wallMs)} (${perSecond(N, run.wallMs).replace("rows", "keys")}), ${mb(run.rssKb)}`,
      "≤ 300 MB",
      run.rssKb / 1024 <= 300,
    );
    const resume = await cli(["resume", runId], dir);
    report(
      `\`stet resume\` of the complete ${n}-key run (start-up, dataset read, plan): wall, peak RSS`,
      `${fmt(resume.wallMs)}, ${mb(resume.rssKb)}`,
      "≤ 3 s",
      resume.wallMs <= 3_000,
    );
    const show = await cli(["show", runId], dir);
    report(
      `\`stet show\` of the ${n}-key run: wall, peak RSS`,
      `${fmt(show.wallMs)}, ${mb(show.rssKb)}`,
      "≤ 0.3 s",
      show.wallMs <= 300,
    );
    const floor = rawScan(join(dir, ".stet/stet.db"), runId);
    if (floor.rows !== N) throw new Error(`the raw scan read ${floor.rows} rows of ${N}`);
    // Read by one thread per core up to four (the default), then by the command's thread alone.
    for (const threads of [undefined, 1]) {
      const flag = threads === undefined ? [] : ["--threads", String(threads)];
      const exported = await cli(["export", runId, "--format", "jsonl", ...flag], dir, {}, 0, {
        discard: true,
      });
      const how = threads === undefined ? `${availableParallelism()} cores` : "--threads 1";
      report(
        `\`stet export --format jsonl\` of the ${n}-key run (to /dev/null, ${how}): wall, rate, peak RSS; the raw scan`,
        `${fmt(exported.wallMs)} (${perSecond(N, exported.wallMs)}), ${mb(exported.rssKb)}; raw scan ${fmt(floor.ms)} (${perSecond(N, floor.ms)}), ${(exported.wallMs / floor.ms).toFixed(1)} × it`,
        "≥ 200,000 rows/s and ≤ 2 × the raw scan",
        (N / exported.wallMs) * 1000 >= 200_000 && exported.wallMs <= 2 * floor.ms,
      );
    }
    const diff = await cli(["diff", runId, runId], dir);
    report(
      `\`stet diff\` of the ${n}-key run with itself (both read and paired): wall, peak RSS`,
      `${fmt(diff.wallMs)}, ${mb(diff.rssKb)}`,
      "≤ 300 MB",
      diff.rssKb / 1024 <= 300,
    );
    // Last (reviews change the run's figures): two reviews, which read those keys' outcomes only.
    writeFileSync(join(dir, "reviews.csv"), "sample_id,epoch,verdict\ns0,1,pass\ns1,1,fail\n");
    const reviewed = await cli(
      ["review", runId, "--import", "reviews.csv", "--reviewer", "bench"],
      dir,
    );
    report(
      `\`stet review --import\` of 2 keys of the ${n}-key run: wall, peak RSS`,
      `${fmt(reviewed.wallMs)}, ${mb(reviewed.rssKb)}`,
      "≤ 300 MB",
      reviewed.rssKb / 1024 <= 300,
    );
    // Its failed keys asked to re-run, the resume SIGKILLed a tenth of the way: `show` counts
    // the plan with the requests still open from the counts the store keeps.
    const asked = N / 10;
    const rerunStored = await killed(
      dir,
      ["resume", runId, "--rerun-failed"],
      runId,
      N + asked / 10,
    );
    const open = asked - (rerunStored - N);
    const showOpen = await cli(["show", runId, "--json"], dir);
    if (JSON.parse(showOpen.stdout).plan.rerun !== open) throw new Error("show miscounted reruns");
    report(
      `\`stet show\` of the ${n}-key run with ${open.toLocaleString()} of ${asked.toLocaleString()} \`--rerun-failed\` requests open: wall, peak RSS`,
      `${fmt(showOpen.wallMs)}, ${mb(showOpen.rssKb)}`,
      "≤ 0.3 s",
      showOpen.wallMs <= 300,
    );
    // An interrupted run's resume: the dataset file is unchanged, so the snapshot is paged.
    const stored = await killedRun(dir, "interrupted", N / 4);
    const resumed = await cli(["resume", "interrupted"], dir);
    report(
      `\`stet resume\` of a ${n}-key run SIGKILLed at ${stored.toLocaleString()} attempts: wall, peak RSS`,
      `${fmt(resumed.wallMs)}, ${mb(resumed.rssKb)}`,
      "≤ 300 MB",
      resumed.rssKb / 1024 <= 300,
    );
    // A distributed run of the same file, its creator its only worker: created from the file's
    // pages, planned from the run's figures, its leased keys found in the snapshot a page at a time.
    const distributed = await cli(
      ["run", "eval.mjs", "--distributed", "--run-id", "distributed"],
      dir,
    );
    report(
      `\`stet run --distributed\` of ${n} keys, one worker (SQLite): wall, peak RSS`,
      `${fmt(distributed.wallMs)} (${perSecond(N, distributed.wallMs).replace("rows", "keys")}), ${mb(distributed.rssKb)}`,
      "≤ 300 MB",
      distributed.rssKb / 1024 <= 300,
    );
    // `--reuse` of the first run with every 100th sample's target edited: planned a page of the
    // file at a time, the reused attempts seeded a page of the source at a time, the rest
    // executed from the snapshot's pages. Last: it adds a run's attempts to the store.
    rmSync(join(dir, "data.jsonl"));
    for (let from = 0; from < N; from += 100_000) {
      const lines = rows(Math.min(N, from + 100_000), from).split("\n");
      const edited = lines.map((row, i) =>
        (from + i) % 100 === 99 ? row.replace('"target":"q', '"target":"Q') : row,
      );
      appendFileSync(join(dir, "data.jsonl"), edited.join("\n"));
    }
    const changed = Math.floor(N / 100);
    const planned = await cli(["plan", "eval.mjs", "--reuse", runId, "--json"], dir);
    if (JSON.parse(planned.stdout).execute !== changed) throw new Error("plan --reuse miscounted");
    report(
      `\`stet plan --reuse\` of the ${n}-key run, ${changed.toLocaleString()} samples edited: wall, peak RSS`,
      `${fmt(planned.wallMs)}, ${mb(planned.rssKb)}`,
      "≤ 300 MB",
      planned.rssKb / 1024 <= 300,
    );
    const reused = await cli(["run", "eval.mjs", "--reuse", runId, "--json"], dir);
    if (JSON.parse(reused.stdout).plan.preserved !== N - changed) throw new Error("reuse missed");
    report(
      `\`stet run --reuse\` of it (${(N - changed).toLocaleString()} keys reused, the rest executed): wall, peak RSS`,
      `${fmt(reused.wallMs)}, ${mb(reused.rssKb)}`,
      "≤ 300 MB",
      reused.rssKb / 1024 <= 300,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
