import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hostId } from "../src/engine/owner.js";
import { loadEvalSource } from "../src/runs/load-eval-source.js";
import { resolveEval } from "../src/eval/resolve-eval.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";
import { startServe, writeChatEval } from "./helpers/serve.js";
import { collectSse } from "./helpers/sse.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./helpers/postgres.js";
import { tempDir } from "./helpers/temp-store.js";

const N = 12;
const PRESERVED = 4;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * A run of chat-eval.mjs as a SIGKILLed owner leaves it: running, its owner's pid gone, the first
 * PRESERVED samples scored.
 */
async function orphanedRun(store: Store, evalFile: string): Promise<string> {
  const loaded = await loadEvalSource(evalFile);
  const ev = await resolveEval(loaded.eval, { baseDir: loaded.baseDir });
  const owner = {
    host: hostId(),
    pid: spawnSync(process.execPath, ["-e", ""]).pid!,
    token: "dead",
  };
  await store.runs.create({
    id: "r_orphan",
    config: {
      evalName: ev.name,
      evalPath: loaded.path,
      epochs: 1,
      concurrency: 2,
      retries: 0,
      reducer: "mean",
      solver: ev.solver.describe?.() ?? {},
      scorers: ev.scorers.map((s) => s.name),
    },
    samples: [...ev.samples],
    owner,
  });
  const now = new Date().toISOString();
  await store.attempts.record(
    "r_orphan",
    owner.token,
    ev.samples.slice(0, PRESERVED).map(({ sample, fingerprint }) => ({
      sampleId: sample.id,
      epoch: 1,
      status: "scored",
      output: sample.id,
      scores: [{ scorer: "exact", value: 1 }],
      usage: null,
      transcript: null,
      error: null,
      startedAt: now,
      completedAt: now,
      durationMs: 1,
      fingerprint,
      provenance: { kind: "executed" },
    })),
  );
  return "r_orphan";
}

/** The store both servers share: its `--store` location and a way to open it in the test. */
interface SharedStore {
  location: string;
  open: () => Store;
}

/** Each store the race runs on: its name, whether to skip it, and how to make a fresh one. */
const stores: [string, boolean, () => SharedStore][] = [
  [
    "a SQLite file",
    false,
    () => {
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      const location = join(tmp.dir, "stet.db");
      return { location, open: () => openSqliteStore(location) };
    },
  ],
  [
    "PostgreSQL",
    SKIP_POSTGRES,
    () => {
      const { schema, drop } = testSchema();
      cleanups.push(drop);
      const url = new URL(TEST_POSTGRES_URL);
      url.searchParams.set("schema", schema);
      return {
        location: url.toString(),
        open: () => openPostgresStore(TEST_POSTGRES_URL, { schema }),
      };
    },
  ],
];

describe.each(stores)("racing resumes on %s", (_name, skip, shared) => {
  // A skipped store is reported as skipped, not left out of the run.
  const test = it.skipIf(skip);
  test("of 50 concurrent resumes over two server processes, exactly one executes; 49 get 409", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const evals = join(tmp.dir, "evals");
    mkdirSync(evals);
    const evalFile = writeChatEval(evals, N);
    const { location, open } = shared();
    const store = open();
    cleanups.push(() => store.close());
    const runId = await orphanedRun(store, evalFile);

    // The model answers nothing until every resume request has its answer, so the winner's run
    // cannot finish early and turn a late loser's 409 into a 400.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const mock = await startMockOpenAI({ respond: async () => (await released, undefined) });
    cleanups.push(() => mock.close());

    const servers = await Promise.all(
      ["B", "C"].map((name) =>
        startServe(["--store", location, "--evals", evals], {
          MOCK_URL: mock.url,
          SERVER_NAME: name,
        }),
      ),
    );
    for (const s of servers) cleanups.push(() => void s.proc.child.kill("SIGKILL"));

    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => servers[i % 2]!.post(`/api/runs/${runId}/resume`)),
    );
    release();
    const winners = answers.filter((r) => r.status === 200);
    const losers = answers.filter((r) => r.status !== 200);
    expect(winners).toHaveLength(1);
    expect(losers.map((r) => r.status)).toEqual(Array(49).fill(409));
    for (const r of losers) {
      expect(await r.json()).toMatchObject({ error: { code: "run_active" } });
    }

    const events = await collectSse(winners[0]!);
    expect(events[0]).toMatchObject({
      event: "started",
      data: { preserved: PRESERVED, remaining: N - PRESERVED },
    });
    expect(events.at(-1)).toMatchObject({ event: "completed", data: { status: "completed" } });
    expect(Object.values(mock.counts())).toEqual(Array(N - PRESERVED).fill(1));

    const perKey = new Map<string, number>();
    for (const a of await store.reads.listAttempts(runId)) {
      perKey.set(a.sampleId, (perKey.get(a.sampleId) ?? 0) + 1);
    }
    expect(perKey.size).toBe(N);
    expect([...perKey.values()].every((n) => n === 1)).toBe(true);
  });
});
