// stet benchmarks: prints figures (medians of repeated runs), asserts nothing.
//   npm run bench            all of them
//   npm run bench -- quick   fewer repetitions
//   npm run bench -- chat    only some groups (startup, throughput, chat, cpu, large, postgres, journal,
//                            agent, sandbox, report, workers, recovery, reuse, rate-limits),
//                            with or without quick
//   npm run bench -- scale   1,000,000 keys (STET_BENCH_SCALE=10000000 for 10 M): only when named
// Each figure is the median of 5 repetitions (1 with quick), with the min and max beside it.
// The postgres and workers groups use STET_BENCH_POSTGRES, else
// postgres://postgres@127.0.0.1:5432/test, in schemas of their own that they drop afterwards;
// they are skipped when that server does not answer.
// Each group is a module of bench/groups/; what they share (timing, medians, printing, temporary
// projects, servers) is bench/harness.mjs.
import agent from "./groups/agent.mjs";
import chat from "./groups/chat.mjs";
import cpu from "./groups/cpu.mjs";
import journal from "./groups/journal.mjs";
import large from "./groups/large.mjs";
import postgres from "./groups/postgres.mjs";
import rateLimits from "./groups/rate-limits.mjs";
import recovery from "./groups/recovery.mjs";
import report from "./groups/report.mjs";
import reuse from "./groups/reuse.mjs";
import sandbox from "./groups/sandbox.mjs";
import scale from "./groups/scale.mjs";
import startup from "./groups/startup.mjs";
import throughput from "./groups/throughput.mjs";
import workers from "./groups/workers.mjs";
import { reps, summary } from "./harness.mjs";

/** The groups by the name that selects them, in the order they run. */
const GROUPS = {
  startup,
  throughput,
  chat,
  cpu,
  large,
  postgres,
  journal,
  agent,
  sandbox,
  report,
  workers,
  recovery,
  reuse,
  "rate-limits": rateLimits,
};
/** Groups that run only when named: minutes each. */
const NAMED_ONLY = { scale };
const chosen = [...Object.keys(GROUPS), ...Object.keys(NAMED_ONLY)].filter((g) =>
  process.argv.includes(g),
);

console.log(`stet benchmarks on ${process.version}, ${reps} repetition(s) each, medians\n`);
for (const [name, group] of Object.entries(GROUPS)) {
  if (chosen.length === 0 || chosen.includes(name)) await group();
}
for (const [name, group] of Object.entries(NAMED_ONLY)) {
  if (chosen.includes(name)) await group();
}
summary();
