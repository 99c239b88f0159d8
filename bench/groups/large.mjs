// The large group: 100,000 samples: peak RSS, and planning and running the resume of a complete run.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStore, resumeRun } from "../stet.mjs";
import { cli, fmt, instant, jsonl, median, project, report, reps, spread } from "../harness.mjs";

const instantEval = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "bench-instant",
  dataset: "./data.jsonl",
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

export default async function large() {
  const dir = project({ "eval.mjs": instantEval, "data.jsonl": jsonl(100_000) });
  try {
    const run = await cli(["run", "eval.mjs", "--json"], dir);
    const runId = JSON.parse(run.stdout).runId;
    report(
      "peak RSS running 100,000 samples (CLI)",
      `${Math.round(run.rssKb / 1024)} MB (wall ${fmt(run.wallMs)})`,
      "< 250 MB",
      run.rssKb / 1024 < 250,
    );

    const plans = [];
    const store = openSqliteStore(join(dir, ".stet/stet.db"));
    const ev = await instant(100_000, 16);
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      const r = await resumeRun({ store, runId, eval: ev });
      plans.push(performance.now() - t0);
      if (r.plan.toExecute !== 0) throw new Error("the complete run had work left");
    }
    await store.close();
    report(
      "plan the resume of a complete 100,000-sample run (in-process, dataset in memory)",
      spread(plans),
      "< 2 s",
      median(plans) < 2_000,
    );
    const resumes = [];
    for (let i = 0; i < reps; i++) resumes.push((await cli(["resume", runId], dir)).wallMs);
    report(
      "`stet resume` of that run, end to end (start-up, dataset read, plan, report)",
      spread(resumes),
      "—",
      true,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
