// The reuse group (issue 31): against a complete 100,000-sample source run, `stet plan --reuse`
// and a `stet run --reuse` that reuses every key, beside the plain resume of that run (its plan
// finds nothing to execute): seconds and peak RSS, each end to end through the CLI.
import { rmSync } from "node:fs";
import { cli, fmt, jsonl, median, project, report, reps, spread } from "../harness.mjs";

const instantEval = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "bench-reuse",
  dataset: "./data.jsonl",
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

const mb = (kb) => `${Math.round(kb / 1024)} MB`;

/** `reps` CLI invocations of `args`: their wall times and peak RSS. */
async function measure(dir, args, check) {
  const walls = [];
  const rss = [];
  for (let i = 0; i < reps; i++) {
    const r = await cli(args, dir);
    check(r.stdout);
    walls.push(r.wallMs);
    rss.push(r.rssKb);
  }
  return { walls, rss };
}

export default async function reuse() {
  const dir = project({ "eval.mjs": instantEval, "data.jsonl": jsonl(100_000) });
  try {
    const source = JSON.parse((await cli(["run", "eval.mjs", "--json"], dir)).stdout).runId;

    const resume = await measure(dir, ["resume", source], (out) => {
      if (!out.includes("nothing left to execute")) throw new Error("the source run had work left");
    });
    report(
      "plain `stet resume` of a complete 100,000-sample run (plan, nothing to execute); peak RSS",
      `${spread(resume.walls)}; ${spread(resume.rss, mb)}`,
      "—",
      true,
    );

    const plan = await measure(dir, ["plan", "eval.mjs", "--reuse", source, "--json"], (out) => {
      if (JSON.parse(out).reused !== 100_000) throw new Error("plan did not reuse every key");
    });
    report(
      "`stet plan --reuse` against that run (every key reusable); peak RSS",
      `${spread(plan.walls)}; ${spread(plan.rss, mb)}`,
      "< 2× the resume's; < 250 MB",
      median(plan.walls) < 2 * median(resume.walls) && median(plan.rss) / 1024 < 250,
    );

    const run = await measure(dir, ["run", "eval.mjs", "--reuse", source, "--json"], (out) => {
      const r = JSON.parse(out);
      if (r.reuse?.reused !== 100_000 || r.plan.toExecute !== 0)
        throw new Error("the run did not reuse every key");
    });
    report(
      "`stet run --reuse` of it, 100 % reused (a new run seeded with 100,000 attempts); peak RSS",
      `${spread(run.walls)}; ${spread(run.rss, mb)}`,
      "—; < 250 MB",
      median(run.rss) / 1024 < 250,
    );
    console.log(
      `  (source run ${source}; times ${fmt(median(run.walls))} median for the full reuse)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
