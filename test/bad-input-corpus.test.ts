import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { createEvalRegistry } from "../src/runs/eval-registry.js";
import { backupPostgresStore, restorePostgresStore } from "../src/store/postgres/backup.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import {
  CORPUS,
  copyInto,
  fill,
  freshDir,
  hashTree,
  limiter,
  loadManifest,
  makeFiles,
  runStet,
  sha256Of,
  type ApiCase,
  type BadCase,
  type CliCase,
  type CliOutcome,
} from "./helpers/bad-corpus.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL } from "./helpers/postgres.js";
import { additionEval } from "./helpers/server-app.js";

/**
 * The bad-input corpus (test/fixtures/bad, see its README.md): every case of manifest.jsonl is
 * an input stet must refuse, run through the real CLI (or the HTTP API, in-process), on SQLite
 * and, where a store is involved, on PostgreSQL. Each case gets a store of its own, a copy of a
 * world with two runs (one completed, one errored), and an empty folder for outputs. Refused
 * means: exit 1 or 2 (HTTP 4xx), a message that names the input, no stack trace and no
 * "unexpected error" (the CLI prints that only for an internal bug), and not a byte of the store
 * or of any file changed, nothing created.
 */

const REPO = fileURLToPath(new URL("..", import.meta.url));
/** BAD_CASES=<regex> runs only the cases whose id matches (e.g. BAD_CASES=^restore/). */
const ONLY = process.env.BAD_CASES ? new RegExp(process.env.BAD_CASES) : undefined;
const CASES = loadManifest().filter((c) => !ONLY || ONLY.test(c.id));
const HANG_MS = 60_000;
/** Spawns at once: the CLI mostly waits on its start-up, so a few per core. */
const limit = limiter(Math.min(6, Math.max(2, 2 * availableParallelism())));

/** The store a case runs against, and how to tell that it did not change. */
interface CaseStore {
  location: string;
  /** A store location that does not exist, which the case must not create. */
  fresh: string;
  /** Every row (PostgreSQL) as one string; the SQLite file is hashed with the case's folder. */
  dump: () => Promise<string>;
  freshExists: () => Promise<boolean>;
  open: () => Store;
  drop: () => Promise<void>;
}

interface World {
  root: string;
  runs: { run: string; errored: string };
  store: (caseDir: string) => Promise<CaseStore>;
  close: () => Promise<void>;
}

/** The shared inputs: the corpus copied, the made files, and `stet` resolvable by eval modules. */
const root = mkdtempSync(join(tmpdir(), "stet-bad-"));
let inputsBefore: Record<string, string>;
beforeAll(() => {
  mkdirSync(join(root, "node_modules"));
  symlinkSync(REPO, join(root, "node_modules/stet"), "dir");
  cpSync(CORPUS, join(root, "bad"), { recursive: true });
  makeFiles(CASES, join(root, "made"));
  inputsBefore = hashTree(root, ["node_modules", "worlds", "cases"]);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function worldRuns(env: NodeJS.ProcessEnv): Promise<World["runs"]> {
  const run = async (extra: NodeJS.ProcessEnv) => {
    const o = await runStet(["run", join(root, "bad/world/eval.mjs"), "--json"], {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1", ...env, ...extra },
      hangMs: HANG_MS,
    });
    expect([0, 3], o.stderr).toContain(o.code);
    return (JSON.parse(o.stdout) as { runId: string }).runId;
  };
  return { run: await run({}), errored: await run({ STET_WORLD_FAIL: "1" }) };
}

async function sqliteWorld(): Promise<World> {
  const base = join(root, "worlds/sqlite/stet.db");
  const runs = await worldRuns({ STET_STORE: base });
  return {
    root,
    runs,
    store: async (caseDir) => {
      const location = join(caseDir, "store/stet.db");
      copyInto(base, location);
      return {
        location,
        fresh: join(caseDir, "out/fresh.db"),
        dump: async () => "",
        freshExists: async () => existsSync(join(caseDir, "out/fresh.db")),
        open: () => openSqliteStore(location, { create: false }),
        drop: async () => {},
      };
    },
    close: async () => {},
  };
}

const schemaUrl = (schema: string) => {
  const url = new URL(TEST_POSTGRES_URL);
  url.searchParams.set("schema", schema);
  return url.toString();
};
const newSchema = (what: string) => `stet_bad_${what}_${Math.random().toString(36).slice(2, 10)}`;

async function postgresWorld(): Promise<World> {
  const admin = new pg.Pool({ connectionString: TEST_POSTGRES_URL, max: 4 });
  const baseSchema = newSchema("base");
  const runs = await worldRuns({ STET_STORE: schemaUrl(baseSchema) });
  const backup = join(root, "worlds/postgres.bak");
  mkdirSync(join(root, "worlds"), { recursive: true });
  await backupPostgresStore({ url: TEST_POSTGRES_URL, schema: baseSchema }, backup);
  const dropSchema = (schema: string) => admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await dropSchema(baseSchema);
  return {
    root,
    runs,
    store: async () => {
      const schema = newSchema("case");
      const fresh = newSchema("fresh");
      await restorePostgresStore(backup, { url: TEST_POSTGRES_URL, schema });
      return {
        location: schemaUrl(schema),
        fresh: schemaUrl(fresh),
        dump: () => dumpSchema(admin, schema),
        freshExists: async () =>
          (await admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [fresh])).rowCount !==
          0,
        open: () => openPostgresStore(TEST_POSTGRES_URL, { schema, create: false }),
        drop: async () => {
          await dropSchema(schema);
          await dropSchema(fresh);
        },
      };
    },
    close: () => admin.end(),
  };
}

/** Every row of every table of `schema`, sorted, as one string. */
async function dumpSchema(db: pg.Pool, schema: string): Promise<string> {
  const tables = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`,
    [schema],
  );
  const dump: Record<string, string[]> = {};
  for (const { name } of tables.rows) {
    const rows = await db.query<{ row: string }>(
      `SELECT row_to_json(t)::text AS row FROM "${schema}"."${name}" t`,
    );
    dump[name] = rows.rows.map((r) => r.row).sort();
  }
  return JSON.stringify(dump);
}

/** What a case did, and whether it left everything as it was. */
interface Outcome {
  answer: string;
  cli?: CliOutcome;
  api?: { status: number; code: unknown; message: unknown };
  /** Files or rows that changed, or "" when none did. */
  changed: string;
  says: string[];
}

async function runCase(world: World, c: BadCase): Promise<Outcome> {
  const dir = freshDir(join(root, "cases"), c.id);
  const out = join(dir, "out");
  mkdirSync(out);
  const store = await world.store(dir);
  try {
    const file = c.file ? join(root, "bad", c.file) : c.make ? join(root, "made", c.make.name) : "";
    const values = {
      file,
      fixtures: join(root, "bad"),
      out,
      store: store.location,
      fresh: store.fresh,
      run: world.runs.run,
      errored: world.runs.errored,
      sha256: file && statSync(file).isFile() ? sha256Of(file) : "",
    };
    const filesBefore = hashTree(dir);
    const rowsBefore = await store.dump();
    const result =
      c.kind === "cli" ? await runCli(c, values, out, store) : await runApi(c, values, store, file);
    const changes = [
      ...diffKeys(filesBefore, hashTree(dir)).map((f) => `file ${f}`),
      ...((await store.dump()) === rowsBefore ? [] : ["the store's rows"]),
      ...((await store.freshExists()) ? [`the fresh store ${store.fresh}`] : []),
    ];
    return { ...result, changed: changes.join(", "), says: c.says.map((s) => fill(s, values)) };
  } finally {
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runCli(
  c: CliCase,
  values: Record<string, string>,
  cwd: string,
  store: CaseStore,
): Promise<Omit<Outcome, "changed" | "says">> {
  const argv = c.argv.map((a) => fill(a, values));
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", STET_STORE: store.location };
  for (const [name, value] of Object.entries(c.env ?? {})) env[name] = fill(value, values);
  const cli = await runStet(argv, { cwd, env, hangMs: HANG_MS });
  const answer =
    `stet ${argv.map((a) => JSON.stringify(a.length > 200 ? `${a.slice(0, 200)}…` : a)).join(" ")}` +
    `\nexit ${cli.code}${cli.signal ? ` (${cli.signal})` : ""}${cli.hung ? " (hung: killed)" : ""}` +
    `\nstdout: ${cli.stdout.slice(0, 4000)}\nstderr: ${cli.stderr.slice(0, 4000)}`;
  return { answer, cli };
}

async function runApi(
  c: ApiCase,
  values: Record<string, string>,
  store: CaseStore,
  file: string,
): Promise<Omit<Outcome, "changed" | "says">> {
  const opened = store.open();
  try {
    const app = createApp({
      store: opened,
      evals: createEvalRegistry([
        { eval: additionEval({ name: "world" }).ev, path: "/virtual/world.ts", baseDir: root },
      ]),
    });
    const { method, path, headers, body, json, bodyFromFile } = c.request;
    const sent =
      bodyFromFile === true
        ? readFileSync(file)
        : json !== undefined
          ? JSON.stringify(json)
          : body === undefined
            ? undefined
            : fill(body, values);
    const res = await app.request(fill(path, values), {
      method,
      headers: {
        ...(sent === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      ...(sent === undefined ? {} : { body: sent }),
    });
    const text = await res.text();
    let error: { code?: unknown; message?: unknown } = {};
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
    } catch {
      // Not JSON: the assertions below say so.
    }
    const answer = `${method} ${path.slice(0, 200)}\n${res.status} ${text.slice(0, 4000)}`;
    return { answer, api: { status: res.status, code: error.code, message: error.message } };
  } finally {
    await opened.close();
  }
}

function diffKeys(a: Record<string, string>, b: Record<string, string>): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]).sort();
}

// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

function expectRefusal(c: BadCase, o: Outcome): void {
  const why = `${c.id}\n${o.answer}`;
  if (c.kind === "cli") {
    const cli = o.cli!;
    expect(cli.hung, why).toBe(false);
    expect(c.exit, why).toContain(cli.code);
    const output = cli.stdout + cli.stderr;
    expect(output, why).not.toMatch(/unexpected error/);
    expect(output, why).not.toMatch(/^\s+at /m);
    // What an input holds is shown escaped: no raw control character reaches the terminal.
    expect(JSON.stringify(output.match(CONTROL) ?? []), why).toBe("[]");
    // An answer quotes what it must to name the input, never a whole huge input.
    expect(output.length, why).toBeLessThan(20_000);
    for (const s of o.says) expect(output, why).toContain(s);
  } else {
    const api = o.api!;
    expect(c.status, why).toContain(api.status);
    expect(api.code, why).toBe(c.code);
    expect(typeof api.message, why).toBe("string");
    expect(String(api.message), why).not.toMatch(/^\s+at /m);
    for (const s of o.says) expect(String(api.message), why).toContain(s);
  }
  expect(o.changed, `${why}\nchanged: ${o.changed}`).toBe("");
}

const stores = [
  { kind: "sqlite" as const, make: sqliteWorld, skip: false },
  { kind: "postgres" as const, make: postgresWorld, skip: SKIP_POSTGRES },
];

for (const { kind, make, skip } of stores) {
  const cases = CASES.filter((c) => c.stores === kind || c.stores === "both");
  describe.skipIf(skip)(`the bad-input corpus on ${kind}`, () => {
    let world: World;
    const outcomes = new Map<string, Promise<Outcome>>();
    beforeAll(async () => {
      world = await make();
      // Every case starts now, a few at a time; each test below waits for its own.
      for (const c of cases) {
        if (c.pending) continue;
        const outcome = limit(() => runCase(world, c));
        outcome.catch(() => {});
        outcomes.set(c.id, outcome);
      }
    }, 120_000);
    afterAll(async () => {
      await Promise.allSettled(outcomes.values());
      await world?.close();
    });

    for (const c of cases) {
      if (c.pending) {
        it.todo(`${c.id} (pending: ${c.pending})`);
        continue;
      }
      it(c.id, async () => expectRefusal(c, await outcomes.get(c.id)!), 10 * 60_000);
    }

    it("leaves every input file as it was", async () => {
      await Promise.allSettled(outcomes.values());
      expect(diffKeys(inputsBefore, hashTree(root, ["node_modules", "worlds", "cases"]))).toEqual(
        [],
      );
    });
  });
}
