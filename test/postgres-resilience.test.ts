import { randomBytes } from "node:crypto";
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import type { RunEvent } from "../src/core/events.js";
import { runEval } from "../src/engine/run-eval.js";
import { defineEval } from "../src/eval/define-eval.js";
import { resolveEval } from "../src/eval/resolve-eval.js";
import type { DatasetRow } from "../src/eval/types.js";
import { scorers } from "../src/scorers/index.js";
import { openPostgresStore } from "../src/store/postgres.js";
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
    const events: RunEvent[] = [];
    let kills = 0;
    const onEvent = (event: RunEvent) => {
      events.push(event);
      if (event.type !== "attempt-committed") return;
      const done = event.progress.done;
      if ((done === 60 && kills === 0) || (done === 180 && kills === 1)) {
        kills++;
        void admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
          [applicationName],
        );
      }
    };
    const report = await runEval({
      store,
      eval: ev,
      onEvent,
      storeRetryDelaysMs: [20, 50, 100, 200, 400, 800],
    });

    expect(kills).toBe(2);
    expect(report.status).toBe("completed");
    const attempts = await store.listAttempts(report.runId);
    expect(attempts).toHaveLength(N);
    expect(new Set(attempts.map((a) => a.sampleId)).size).toBe(N);
    expect(attempts.every((a) => a.status === "scored")).toBe(true);
  });
});
