import Database from "better-sqlite3";
import { mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startMockOpenAI, type MockAction, type MockOpenAI } from "./helpers/mock-openai.js";
import { startServe, writeChatEval, type ServeProcess } from "./helpers/serve.js";
import { collectSse, readSse, readUntil } from "./helpers/sse.js";
import { tempDir } from "./helpers/temp-store.js";

const SECRET = "sk-test-kill-resume-SECRET-42";
const N = 20;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** The mock; `forA` may override how server A's n-th request is answered. */
async function mockServer(forA: (n: number, key: string) => MockAction | undefined) {
  let fromA = 0;
  const mock = await startMockOpenAI({
    latencyMs: 20,
    respond: (req) => (req.headers["x-server"] === "A" ? forA(++fromA, req.key) : undefined),
  });
  cleanups.push(() => mock.close());
  return mock;
}

async function setup(forA: (n: number, key: string) => MockAction | undefined) {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const evals = join(tmp.dir, "evals");
  mkdirSync(evals);
  writeChatEval(evals, N);
  const db = join(tmp.dir, "stet.db");
  const mock = await mockServer(forA);
  const env = { MOCK_URL: mock.url, OPENAI_API_KEY: SECRET };
  const serve = async (name: string) => {
    const server = await startServe(["--store", db, "--evals", evals], {
      ...env,
      SERVER_NAME: name,
    });
    cleanups.push(() => {
      server.proc.child.kill("SIGKILL");
    });
    return server;
  };
  return { tmp, db, mock, serve };
}

function attemptRows(db: string, runId: string): unknown[][] {
  const raw = new Database(db, { readonly: true });
  try {
    return raw
      .prepare("SELECT * FROM attempts WHERE run_id = ? ORDER BY rowid")
      .raw()
      .all(runId) as unknown[][];
  } finally {
    raw.close();
  }
}

/** The sample ids with open (not yet committed) journal entries. */
function openJournalKeys(db: string, runId: string): Set<string> {
  const raw = new Database(db, { readonly: true });
  try {
    const rows = raw
      .prepare("SELECT DISTINCT sample_id FROM journal WHERE run_id = ? AND attempt IS NULL")
      .all(runId) as { sample_id: string }[];
    return new Set(rows.map((row) => row.sample_id));
  } finally {
    raw.close();
  }
}

/** Requests per sample key sent by the named server. */
function requestsFrom(mock: MockOpenAI, server: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of mock.requests.filter((r) => r.headers["x-server"] === server)) {
    counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
  }
  return counts;
}

async function startRun(server: ServeProcess, samples: number) {
  const stream = readSse(await server.post("/api/runs", { eval: "chat-eval" }));
  const seen = await readUntil(stream, "sample", samples);
  return { runId: String(seen[0]?.data.runId), stream };
}

describe("two servers on one SQLite store", () => {
  it("B resumes exactly the remaining keys after A is SIGKILLed; stored attempts stand", async () => {
    // A's 7th request and later are never answered: its run stops mid-way with calls in flight.
    const { db, mock, serve, tmp } = await setup((n) => (n > 6 ? { hang: true } : undefined));
    const [a, b] = await Promise.all([serve("A"), serve("B")]);
    const { runId, stream } = await startRun(a, 4);

    const refused = await b.post(`/api/runs/${runId}/resume`);
    expect(refused.status).toBe(409);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("run_active");
    expect(body.error.message).toMatch(
      new RegExp(`pid ${a.pid} on \\S+, heartbeat \\d+\\.\\ds ago`),
    );

    a.proc.child.kill("SIGKILL");
    await a.proc.done;
    await stream.return(undefined);
    const before = attemptRows(db, runId);
    const preserved = new Set(before.map((row) => String(row[1])));
    // A key whose chat reply A had journaled but whose attempt it had not committed yet is
    // replayed from the journal by the resume, not requested again (the step journal).
    const replayed = openJournalKeys(db, runId);
    expect(preserved.size).toBeGreaterThanOrEqual(4);
    expect(preserved.size).toBeLessThan(N);

    const events = await collectSse(await b.post(`/api/runs/${runId}/resume`));
    expect(events[0]).toMatchObject({
      event: "started",
      data: {
        runId,
        resumed: true,
        total: N,
        preserved: preserved.size,
        remaining: N - preserved.size,
      },
    });
    expect(events.at(-1)).toMatchObject({ event: "completed", data: { status: "completed" } });

    // Exactly the remaining keys executed, once each, and only by B.
    const fromB = requestsFrom(mock, "B");
    const keys = Array.from({ length: N }, (_, i) => `s${String(i).padStart(2, "0")}`);
    expect([...fromB.keys()].sort()).toEqual(
      keys.filter((k) => !preserved.has(k) && !replayed.has(k)),
    );
    expect([...fromB.values()].every((n) => n === 1)).toBe(true);

    // Every attempt stored before the kill is byte-identical afterwards.
    const after = attemptRows(db, runId);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after).toHaveLength(N);

    const detail = (await (await b.fetch(`/api/runs/${runId}`)).json()) as Record<string, unknown>;
    expect(detail).toMatchObject({
      status: "completed",
      counts: { total: N, done: N, remaining: 0 },
    });
    const again = await b.post(`/api/runs/${runId}/resume`);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: { code: "nothing_to_resume" } });

    // The key reached the model server, and nowhere else.
    expect(mock.requests[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);
    const texts = [JSON.stringify(detail), events.map((e) => e.raw).join("\n"), b.proc.stderr()];
    for (const text of texts) expect(text).not.toContain(SECRET);
    for (const file of readdirSync(tmp.dir).filter((f) => f.startsWith("stet.db"))) {
      expect(readFileSync(join(tmp.dir, file)).includes(SECRET)).toBe(false);
    }
  });

  it("SIGTERM stops a server's runs gracefully: they become interrupted and resumable", async () => {
    // A's requests after the 5th are slow, so the run is mid-way whenever the signal lands.
    const { db, serve } = await setup((n, key) =>
      n > 5 ? { reply: key, latencyMs: 800 } : undefined,
    );
    const a = await serve("A");
    const { runId, stream } = await startRun(a, 3);
    a.proc.child.kill("SIGTERM");
    const rest = [];
    for await (const e of stream) rest.push(e);
    expect(rest.map((e) => e.event)).toContain("stopping");
    const exit = await a.proc.done;
    expect(exit.code).toBe(130);
    // The command names the server's store, so it works as printed from any shell.
    expect(exit.stderr).toContain(`resume it with: stet resume ${runId} --store ${db}\n`);
    const left = N - attemptRows(db, runId).length;

    const b = await serve("B");
    const run = (await (await b.fetch(`/api/runs/${runId}`)).json()) as Record<string, unknown>;
    expect(run).toMatchObject({ status: "interrupted", owner: null, counts: { remaining: left } });
    const events = await collectSse(await b.post(`/api/runs/${runId}/resume`));
    expect(events[0]?.data).toMatchObject({ remaining: left });
    expect(events.at(-1)).toMatchObject({ data: { status: "completed" } });
  });
});
