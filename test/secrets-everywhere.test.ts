import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./helpers/postgres.js";
import { startServe } from "./helpers/serve.js";

// Guarantee 9: no secret in the store, logs, exports or the UI, even when a model endpoint echoes
// the request's Authorization header and the key back into its replies and errors.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const API_KEY = `sk-echo-${randomBytes(16).toString("hex")}`;
const HEADER_SECRET = `hdr-${randomBytes(12).toString("hex")}`;
const STET_TOKEN = randomBytes(24).toString("hex");
const STORE_PASSWORD = `pgpw-${randomBytes(8).toString("hex")}`;
const SECRETS = { API_KEY, HEADER_SECRET, STET_TOKEN, STORE_PASSWORD };

/** The forms an echoing server may send a secret back in. */
function forms(secret: string): string[] {
  return [secret, Buffer.from(secret).toString("base64"), encodeURIComponent(secret)];
}

function expectClean(where: string, text: string | Buffer): void {
  const haystack = typeof text === "string" ? text : text.toString("latin1");
  for (const [name, secret] of Object.entries(SECRETS)) {
    for (const form of forms(secret)) {
      if (haystack.includes(form)) throw new Error(`${where} holds ${name} (as ${form})`);
    }
  }
}

/** A mock endpoint that quotes back everything it was sent: headers, the key, in every form. */
async function echoingEndpoint(): Promise<MockOpenAI> {
  const mock = await startMockOpenAI({
    respond: ({ key, headers }) => {
      const auth = String(headers.authorization);
      const said = `you sent ${auth} and x-team ${String(headers["x-team"])} (base64 ${Buffer.from(API_KEY).toString("base64")})`;
      if (key === "q3")
        return { status: 400, body: { error: { message: `bad request: ${said}` } } };
      return { reply: key === "q1" ? `4 ${said}` : JSON.stringify({ answer: key, echo: said }) };
    },
  });
  cleanups.push(() => mock.close());
  return mock;
}

const EVAL = `import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "echo",
  dataset: [
    { id: "q1", input: "q1", target: "4" },
    { id: "q2", input: "q2", target: "q2" },
    { id: "q3", input: "q3", target: "q3" },
  ],
  solver: solvers.chat({
    model: "gpt-test",
    baseURL: process.env.MOCK_URL,
    maxRetries: 0,
    headers: { "x-team": process.env.TEAM_HEADER },
  }),
  scorers: [
    scorers.includes(),
    // A scorer that quotes the output in every field a score has.
    { name: "quote", score: ({ output }) => ({ value: 1, answer: String(output),
      explanation: "saw " + String(output), metadata: { seen: String(output) } }) },
  ],
});
`;

interface Outputs {
  texts: [string, string][];
  runId: string;
}

/** Runs the eval through the CLI, then reads it back every way the CLI offers. */
async function runAndReadBack(store: string, env: NodeJS.ProcessEnv): Promise<Outputs> {
  const project = evalProject({ "eval.mjs": EVAL });
  cleanups.push(project.cleanup);
  const at = { cwd: project.dir, env };
  const texts: [string, string][] = [];
  const keep = (what: string, result: CliResult) => {
    texts.push([`${what} stdout`, result.stdout], [`${what} stderr`, result.stderr]);
    return result;
  };
  const results = join(project.dir, "results.jsonl");
  const run = keep(
    "run",
    await runCli(["run", "eval.mjs", "--store", store, "--output", results, "--json"], at),
  );
  expect(run.code, run.stderr).toBe(3); // q3 is an error attempt
  const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
  texts.push(["--output file", readFileSync(results, "utf8")]);
  keep("resume", await runCli(["resume", runId, "--store", store], at));
  keep("list", await runCli(["list", "--store", store], at));
  keep("show", await runCli(["show", runId, "--store", store], at));
  keep("show --json", await runCli(["show", runId, "--store", store, "--json"], at));
  for (const format of ["jsonl", "csv", "resultset", "junit", "html", "markdown"]) {
    const exported = keep(
      format,
      await runCli(["export", runId, "--format", format, "--store", store], at),
    );
    expect(exported.code, exported.stderr).toBe(0);
  }
  // The output did hold the echo, only without the secrets: redaction, not dropping.
  const jsonl = texts.find(([what]) => what === "jsonl stdout")![1];
  expect(jsonl).toContain("you sent Bearer [redacted] and x-team [redacted]");
  const lines = jsonl
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as ExportedLine);
  // Each attempt says what was taken out of it, by name.
  expect(lines.find((l) => l.sampleId === "q1")?.redacted).toEqual(SAID);
  expect(lines.find((l) => l.sampleId === "q3")?.error?.message).toContain("bad request");
  const result = readFileSync(results, "utf8").split("\n")[0]!;
  expect((JSON.parse(result) as EvalPortLine).metadata.stet.redacted).toEqual(SAID);
  return { texts, runId };
}

const SAID = ["OPENAI_API_KEY", "header x-team"];

interface ExportedLine {
  sampleId: string;
  error?: { message: string };
  redacted?: string[];
}

interface EvalPortLine {
  metadata: { stet: { redacted?: string[] } };
}

/** Everything the server shows of a run: API answers, the UI page, and its own stderr. */
async function readThroughServer(store: string, runId: string, env: NodeJS.ProcessEnv) {
  const server = await startServe(["--store", store], env);
  cleanups.push(() => void server.proc.child.kill("SIGKILL"));
  const auth = { headers: { authorization: `Bearer ${STET_TOKEN}` } };
  const texts: [string, string][] = [];
  for (const path of [
    "/",
    "/api/runs",
    `/api/runs/${runId}`,
    `/api/runs/${runId}/samples`,
    `/api/runs/${runId}/samples/q1`,
    `/api/runs/${runId}/samples/q3`,
    `/api/runs/${runId}/events`,
    "/api/benchmarks/echo",
  ]) {
    const res = await server.fetch(path, auth);
    expect(res.status, path).toBe(200);
    texts.push([`GET ${path}`, await res.text()]);
  }
  const sample = JSON.parse(texts[4]![1]) as { attempts: { redacted?: string[] }[] };
  expect(sample.attempts[0]?.redacted).toEqual(SAID);
  // A wrong token is not echoed back or logged either.
  await server.fetch("/api/runs", { headers: { authorization: `Bearer ${API_KEY}` } });
  server.proc.child.kill("SIGTERM");
  await server.proc.done;
  texts.push(["serve stdout", server.proc.stdout()], ["serve stderr", server.proc.stderr()]);
  return texts;
}

function env(mock: MockOpenAI): NodeJS.ProcessEnv {
  return {
    MOCK_URL: mock.url,
    OPENAI_API_KEY: API_KEY,
    TEAM_HEADER: HEADER_SECRET,
    STET_TOKEN,
  };
}

describe("secrets echoed by a model endpoint (guarantee 9)", () => {
  it("reach nothing stet writes: SQLite file and WAL, exports, --output, stdout/stderr, API and UI", async () => {
    const mock = await echoingEndpoint();
    const project = evalProject({});
    cleanups.push(project.cleanup);
    const store = join(project.dir, "store", "stet.db");
    const { texts, runId } = await runAndReadBack(store, env(mock));
    // The endpoint really was sent the secrets it echoed.
    expect(mock.requests[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    texts.push(...(await readThroughServer(store, runId, env(mock))));
    for (const [where, text] of texts) expectClean(where, text);
    const files = readdirSync(join(project.dir, "store"));
    expect(files.some((f) => f === "stet.db")).toBe(true);
    for (const file of files) expectClean(file, readFileSync(join(project.dir, "store", file)));
  });

  it.skipIf(SKIP_POSTGRES)(
    "reach no table or column of PostgreSQL, and the store's password is never printed",
    async () => {
      const mock = await echoingEndpoint();
      const { schema, drop } = testSchema();
      cleanups.push(drop);
      // Trust authentication ignores the password: it is there to be leaked, and must not be.
      const url = new URL(TEST_POSTGRES_URL);
      url.password = STORE_PASSWORD;
      url.searchParams.set("schema", schema);
      const store = url.toString();
      const { texts, runId } = await runAndReadBack(store, env(mock));
      texts.push(...(await readThroughServer(store, runId, env(mock))));
      for (const [where, text] of texts) expectClean(where, text);

      const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await client.connect();
      try {
        const tables = await client.query<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
          [schema],
        );
        expect(tables.rows.map((r) => r.table_name)).toContain("attempts");
        for (const { table_name: table } of tables.rows) {
          const rows = await client.query<{ row: string }>(
            `SELECT t::text AS row FROM "${schema}"."${table}" t`,
          );
          for (const { row } of rows.rows) expectClean(`${table} row`, row);
        }
      } finally {
        await client.end();
      }
    },
  );
});
