import { describe, expect, it, onTestFinished } from "vitest";
import { workerId } from "../src/runs/run-workers.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import type { Store } from "../src/store/types.js";
import { runCli } from "./helpers/cli.js";
import { seedDistributedRun } from "./helpers/distributed-run.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchemaPool } from "./helpers/postgres.js";
import { startServe } from "./helpers/serve.js";
import { tempStore } from "./helpers/temp-store.js";

// A distributed run's workers shown by `stet show` and `stet list`, on both stores, and the run
// left running (no owner is not a dead owner) by every reader that recovers orphans.

interface Opened {
  store: Store;
  /** What `--store` takes. */
  location: string;
}

function sqlite(): Opened {
  const t = tempStore();
  onTestFinished(t.cleanup);
  return { store: t.store, location: t.path };
}

function postgres(): Opened {
  const { url } = testSchemaPool();
  const schema = new URL(url).searchParams.get("schema")!;
  const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
  onTestFinished(() => store.close());
  return { store, location: url };
}

interface ShownWorker {
  id: string;
  host: string;
  pid: number;
  concurrency: number;
  keysDone: number;
  rejected: number;
  state: string;
  heartbeatAgeMs: number;
  leaseExpired: boolean;
}

const stores = [
  { kind: "SQLite", open: sqlite, skip: false },
  { kind: "PostgreSQL", open: postgres, skip: SKIP_POSTGRES },
];

describe.each(stores)("a distributed run's workers on $kind", ({ open, skip }) => {
  it.skipIf(skip)(
    "stet show and stet list show the workers and the active count, never a token",
    async () => {
      const { store, location } = open();
      const { runId, active, left, ordinaryId } = await seedDistributedRun(store);
      const stet = async (...args: string[]) => {
        const result = await runCli([...args, "--store", location]);
        expect(result.code, result.stderr).toBe(0);
        // A worker's token fences its writes: no part of it is ever printed.
        for (const token of [active.token, left.token]) {
          expect(result.stdout).not.toContain(token);
          expect(result.stdout).not.toContain(token.slice(0, 12));
        }
        return result.stdout;
      };

      const shown = JSON.parse(await stet("show", runId, "--json")) as {
        distributed: boolean;
        owner: unknown;
        workers: ShownWorker[];
        counts: { total: number; scored: number; remaining: number };
      };
      expect(shown).toMatchObject({ distributed: true, owner: null });
      expect(shown.counts).toMatchObject({ total: 6, scored: 3, remaining: 3 });
      expect(shown.workers).toHaveLength(2);
      expect(shown.workers[0]).toMatchObject({
        id: workerId(active.token),
        host: "alpha-host",
        pid: 4242,
        concurrency: 4,
        keysDone: 2,
        rejected: 0,
        state: "active",
        leaseExpired: false,
      });
      expect(shown.workers[1]).toMatchObject({
        id: workerId(left.token),
        host: "beta-host",
        concurrency: 2,
        keysDone: 1,
        rejected: 1,
        state: "finished",
      });
      expect(shown.workers[0]!.heartbeatAgeMs).toBeLessThan(60_000);
      expect(shown.workers[0]).not.toHaveProperty("token");

      const text = await stet("show", runId);
      expect(text).toContain(`run ${runId} · arithmetic · running (distributed, 1 worker)`);
      const lines = text.split("\n");
      const alpha = lines.find((l) => l.includes(workerId(active.token)));
      const beta = lines.find((l) => l.includes(workerId(left.token)));
      expect(alpha).toMatch(/alpha-host\s+4242\s+4\s+2\s+active\s+\d+(\.\d)?(ms|s) ago/);
      expect(beta).toMatch(/beta-host\s+4242\s+2\s+1\s+1\s+finished\s+\d+(\.\d)?(ms|s) ago/);
      expect(lines.some((l) => /\brejected\b/.test(l))).toBe(true);

      const plain = JSON.parse(await stet("show", ordinaryId, "--json")) as object;
      expect(plain).toMatchObject({ distributed: false });
      expect(plain).not.toHaveProperty("workers");

      const listed = JSON.parse(await stet("list", "--json")) as Record<string, unknown>[];
      expect(listed.find((r) => r.id === runId)).toMatchObject({
        status: "running",
        distributed: true,
        workers: 1,
        done: 3,
        total: 6,
      });
      const ordinary = listed.find((r) => r.id === ordinaryId);
      expect(ordinary).toMatchObject({ status: "completed", distributed: false });
      expect(ordinary).not.toHaveProperty("workers");

      const table = await stet("list");
      expect(table.split("\n").find((l) => l.startsWith(`${runId} `))).toMatch(
        /running \(distributed, 1 worker\)\s+3\/6/,
      );

      // Every reader above recovers orphans first: a run without an owner is not an orphan.
      expect(await store.runs.get(runId)).toMatchObject({ status: "running", owner: null });
    },
  );

  it.skipIf(skip)("server boot leaves a running distributed run running", async () => {
    const { store, location } = open();
    const { runId, active } = await seedDistributedRun(store);
    const server = await startServe(["--store", location], { STET_STALE_MS: "1000" });
    onTestFinished(async () => {
      server.proc.child.kill("SIGTERM");
      await server.proc.done;
    });
    const res = await server.fetch(`/api/runs/${runId}`);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: "running", distributed: true, activeWorkers: 1 });
    expect(JSON.stringify(body)).not.toContain(active.token);
    // Past a stale limit and a recovery sweep: still running, still no owner.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await store.runs.get(runId)).toMatchObject({ status: "running", owner: null });
  });
});
