// A process of its own that measures one instant run's commits, for A/B of two builds:
//   node bench/commit-probe.mjs <checkout> <postgres|sqlite> <n> <concurrency> [profile.cpuprofile]
// <checkout> is the root of a built stet (its dist/ is imported). A warm-up run of n/4 samples
// (on a store of its own) comes first; then, of the measured run's runEval, one JSON line: its
// samples/s, the main thread's CPU per sample (/proc/thread-self/schedstat), the process's, the
// store's commits (`attempts.record` calls) with their mean wall time and share of the run's wall,
// the statements sent to PostgreSQL (every pg client's queries, counted) and the load average.
// STET_PROBE_STATEMENTS=1 also prints the statements sent most, each with its count and mean
// time from sent to answered; STET_PROBE_LOG_DURATIONS=1 has the server log every statement's
// duration (log_min_duration_statement = 0 on the store's connections: a superuser's session
// setting, read from the server's log). PostgreSQL: STET_BENCH_POSTGRES, else
// postgres://postgres@127.0.0.1:5432/test, in schemas of its own that it drops afterwards.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { measureWork } from "./measure-work.mjs";

const [checkout, kind, nText, concurrencyText, profilePath] = process.argv.slice(2);
const n = Number(nText);
const concurrency = Number(concurrencyText);
const POSTGRES = process.env.STET_BENCH_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test";
const stet = await import(pathToFileURL(join(checkout, "dist/index.js")).href);
const stetPostgres = await import(pathToFileURL(join(checkout, "dist/postgres.js")).href);
const dir = mkdtempSync(join(tmpdir(), "stet-commit-probe-"));

/** Statements sent while counting, by their first 60 characters: count and ms sent to answered. */
const statements = new Map();
let counting = false;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, ...rest) {
  const answer = query.call(this, config, ...rest);
  if (counting && answer?.then) {
    const text = (typeof config === "string" ? config : config?.text) ?? "?";
    const name = text.replace(/\s+/g, " ").trim().slice(0, 60);
    const entry = statements.get(name) ?? { count: 0, ms: 0 };
    statements.set(name, entry);
    entry.count++;
    const sent = performance.now();
    answer.then(
      () => (entry.ms += performance.now() - sent),
      () => {},
    );
  }
  return answer;
};
if (process.env.STET_PROBE_LOG_DURATIONS) {
  const connect = pg.Client.prototype.connect;
  pg.Client.prototype.connect = function (callback) {
    if (typeof callback !== "function") return connect.call(this, callback);
    return connect.call(this, (error) => {
      if (error) return callback(error);
      query.call(this, "SET log_min_duration_statement = 0").then(() => callback(null), callback);
    });
  };
}

async function dropSchema(schema) {
  const client = new pg.Client({ connectionString: POSTGRES });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}

/** One instant run of `count` samples on a fresh store, `measured` around its runEval. */
async function run(count, name, measured) {
  const ev = await stet.resolveEval(
    stet.defineEval({
      name: "bench-commit-probe",
      dataset: Array.from({ length: count }, (_, i) => ({
        id: `${name}${i}`,
        input: `question ${i}`,
        target: `question ${i}`,
      })),
      solver: (sample) => sample.input,
      scorers: [stet.scorers.exact()],
      concurrency,
    }),
    { baseDir: dir },
  );
  const schema = `stet_bench_probe_${process.pid}_${name}`;
  const store =
    kind === "postgres"
      ? stetPostgres.openPostgresStore(POSTGRES, { schema })
      : stet.openSqliteStore(join(dir, `${name}.db`));
  const record = store.attempts.record.bind(store.attempts);
  store.attempts.record = async (...args) => {
    const started = performance.now();
    try {
      return await record(...args);
    } finally {
      commits.count++;
      commits.ms += performance.now() - started;
    }
  };
  try {
    const report = await measured(() => stet.runEval({ store, eval: ev }));
    if (report.counts.scored !== count)
      throw new Error(`${report.counts.scored} of ${count} scored`);
  } finally {
    await store.close();
    if (kind === "postgres") await dropSchema(schema);
  }
}

let commits = { count: 0, ms: 0 };
let figures;
/** Runs `work` measured (and profiled when asked), counting its commits and statements. */
async function measure(work) {
  statements.clear();
  commits = { count: 0, ms: 0 };
  counting = true;
  const { result, wallMs, threadUs, cpu } = await measureWork(work, profilePath);
  counting = false;
  figures = {
    checkout,
    kind,
    n,
    concurrency,
    perSecond: Math.round((n / wallMs) * 1000),
    mainUsPerSample: +(threadUs / n).toFixed(1),
    processUsPerSample: +((cpu.user + cpu.system) / n).toFixed(1),
    commits: commits.count,
    commitMs: +(commits.ms / commits.count).toFixed(2),
    commitShare: +(commits.ms / wallMs).toFixed(2),
    statements: [...statements.values()].reduce((sum, s) => sum + s.count, 0),
    load: readFileSync("/proc/loadavg", "utf8").split(" ")[0],
  };
  return result;
}

try {
  await run(Math.max(1, Math.floor(n / 4)), "w", (work) => work());
  await run(n, "m", measure);
  process.stdout.write(JSON.stringify(figures) + "\n");
  if (process.env.STET_PROBE_STATEMENTS) {
    const top = [...statements].sort((a, b) => b[1].count - a[1].count).slice(0, 12);
    for (const [name, s] of top) {
      console.log(
        `${String(s.count).padStart(7)} ${(s.ms / s.count).toFixed(2).padStart(7)} ms  ${name}`,
      );
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
