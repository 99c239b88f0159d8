import { randomBytes } from "node:crypto";
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import type { RunEvent } from "../src/core/events.js";
import { runEval } from "../src/runs/start-run.js";
import { defineEval } from "../src/eval/define-eval.js";
import { resolveEval } from "../src/eval/resolve-eval.js";
import type { DatasetRow } from "../src/eval/types.js";
import { scorers } from "../src/scorers/index.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./helpers/postgres.js";

const N = 300;

describe.skipIf(SKIP_POSTGRES)("a PostgreSQL store whose connections die mid-run", () => {
  it("retries the commits, reconnects and finishes the run with every key once", async () => {
    const { schema, drop } = testSchema();
    const applicationName = `stet_test_${randomBytes(4).toString("hex")}`;
    const store = openPostgresStore(TEST_POSTGRES_URL, { schema, applicationName });
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    onTestFinished(async () => {
      await store.close();
      await admin.end();
      await drop();
    });
    const ev = await resolveEval(
      defineEval({
        name: "resilient",
        dataset: Array.from({ length: N }, (_, i) => ({
          id: `s${i}`,
          input: i,
          target: String(i),
        })) as DatasetRow[],
        solver: async (sample) => {
          await new Promise((r) => setTimeout(r, 3));
          return String(sample.input);
        },
        scorers: [scorers.exact()],
        concurrency: 4,
      }),
      { baseDir: process.cwd() },
    );

    // Kill every connection of this store (as a database restart would) twice during the run.
    // The kill reports which backends it terminated and how many attempts the database held at
    // that moment, so the test sees that live connections of this store died mid-run.
    interface Kill {
      done: number;
      committed: number;
      terminated: { application_name: string; terminated: boolean }[];
    }
    const kills: Promise<Kill>[] = [];
    const onEvent = (event: RunEvent) => {
      if (event.type !== "attempt-committed") return;
      const done = event.progress.done;
      if ((done === 60 && kills.length === 0) || (done === 180 && kills.length === 1)) {
        kills.push(
          admin
            .query<{ application_name: string; terminated: boolean; committed: string }>(
              `SELECT application_name, pg_terminate_backend(pid) AS terminated,
                 (SELECT count(*) FROM "${schema}".attempts) AS committed
               FROM pg_stat_activity
               WHERE application_name = $1 AND pid <> pg_backend_pid()`,
              [applicationName],
            )
            .then(({ rows }) => ({
              done,
              committed: rows.length === 0 ? -1 : Number(rows[0]!.committed),
              terminated: rows.map(({ application_name, terminated }) => ({
                application_name,
                terminated,
              })),
            })),
        );
      }
    };
    const report = await runEval({
      store,
      eval: ev,
      onEvent,
      storeRetryDelaysMs: [20, 50, 100, 200, 400, 800],
    });
    expect(report.status).toBe("completed");

    const done = await Promise.all(kills);
    expect(done.map((k) => k.done)).toEqual([60, 180]);
    for (const kill of done) {
      // At least one backend, all of them this store's, and each one terminated.
      expect(kill.terminated.length).toBeGreaterThan(0);
      expect(kill.terminated).toEqual(
        kill.terminated.map(() => ({ application_name: applicationName, terminated: true })),
      );
      // The run was still executing: some keys were not committed yet when the kill landed.
      expect(kill.committed).toBeGreaterThanOrEqual(kill.done);
      expect(kill.committed).toBeLessThan(N);
    }

    // Every key exactly once, read from the database itself rather than through the store.
    const { rows } = await admin.query<{ sample_id: string; status: string; n: string }>(
      `SELECT sample_id, min(status) AS status, count(*) AS n
       FROM "${schema}".attempts WHERE run_id = $1 GROUP BY sample_id ORDER BY sample_id`,
      [report.runId],
    );
    expect(rows).toHaveLength(N);
    expect(rows.map((r) => r.sample_id).sort()).toEqual(
      Array.from({ length: N }, (_, i) => `s${i}`).sort(),
    );
    expect(rows.filter((r) => r.n !== "1" || r.status !== "scored")).toEqual([]);
    const { rows: total } = await admin.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${schema}".attempts`,
    );
    expect(total[0]!.n).toBe(String(N));
  });
});
