import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchemaPool } from "./helpers/postgres.js";

// A new run's snapshot is inserted into PostgreSQL a page of rows a statement: one statement of
// every sample built its three arrays (ids, fingerprints, the samples as JSON) and their wire
// text whole, ~265 MB more peak RSS for 200,000 samples, and ran out of a 160 MB heap; paged, it
// fits in 96 MB (the cap below leaves room for a loaded machine). Not timed.
const SAMPLES = 200_000;
const HEAP_MB = 128;
const POSTGRES = fileURLToPath(new URL("../dist/postgres.js", import.meta.url));

/** Creates a run of SAMPLES samples in the store at `url`, in a child with its heap capped. */
const CREATE = `
const { openPostgresStore } = await import(process.env.STET_POSTGRES_MODULE);
const samples = [];
for (let i = 0; i < ${SAMPLES}; i++) {
  samples.push({
    sample: { id: "s" + i, input: "q " + i, target: "q " + i },
    fingerprint: i.toString(16).padStart(64, "0"),
  });
}
const store = openPostgresStore(process.env.STET_STORE_URL, { schema: process.env.STET_STORE_SCHEMA });
await store.runs.create({
  id: "big",
  config: { evalName: "big", epochs: 1, concurrency: 1, retries: 0, reducer: "mean",
    solver: { kind: "function", name: "echo" }, scorers: ["exact"] },
  samples,
  owner: { token: "t".repeat(32), pid: process.pid, host: "here" },
});
await store.close();
`;

function createCapped(schema: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(
    process.execPath,
    [`--max-old-space-size=${HEAP_MB}`, "--input-type=module", "-e", CREATE],
    {
      env: {
        ...process.env,
        STET_STORE_URL: TEST_POSTGRES_URL,
        STET_STORE_SCHEMA: schema,
        STET_POSTGRES_MODULE: POSTGRES,
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr })));
}

describe.skipIf(SKIP_POSTGRES)("a PostgreSQL run's snapshot with the heap capped", () => {
  it(`records ${SAMPLES.toLocaleString("en-US")} samples under --max-old-space-size=${HEAP_MB}`, async () => {
    const { url, db } = testSchemaPool();
    const created = await createCapped(new URL(url).searchParams.get("schema")!);
    expect(created.code, created.stderr).toBe(0);
    const { rows } = await db.query<{ n: string; first: string; last: string }>(
      "SELECT count(*) AS n, min(sample_id) AS first, max(fingerprint) AS last FROM samples WHERE run_id = 'big'",
    );
    expect(rows[0]).toEqual({
      n: String(SAMPLES),
      first: "s0",
      last: (SAMPLES - 1).toString(16).padStart(64, "0"),
    });
  }, 300_000);
});
