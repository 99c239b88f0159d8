import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defineEval } from "../src/eval/define-eval.js";
import { scorers } from "../src/scorers/index.js";
import { testApp } from "./helpers/server-app.js";
import { collectSse } from "./helpers/sse.js";
import { tempStore } from "./helpers/temp-store.js";
import { WHOLE_READS, watchedReads } from "./helpers/watched-reads.js";

// The server starts and resumes a registered eval's large dataset file as `stet run` and
// `stet resume` do (issue 34): a run created and executed from the file's pages, a resume of it
// from the snapshot's pages while the file is unchanged, neither holding the dataset or a list of
// its keys. `pagedDatasetBytes: 0` makes a small file take that way (the default is 8 MiB).

const N = 1_100;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe("the API with a registered eval's large dataset file", () => {
  it("starts it from the file's pages and resumes it from the snapshot's, holding neither whole", async () => {
    let failing = true;
    const ev = defineEval({
      name: "paged-api",
      dataset: "./data.jsonl",
      solver: (sample: { input: unknown }) => {
        if (failing && Number(sample.input) % 9 === 0) throw new Error("not yet");
        return { output: String(Number(sample.input) * 2) };
      },
      scorers: [scorers.exact()],
      concurrency: 4,
    });
    const own = tempStore();
    cleanups.push(own.cleanup);
    const watch = watchedReads(own.store);
    const t = testApp([ev], { store: watch.store, pagedDatasetBytes: 0 });
    cleanups.push(t.cleanup);
    const rows = Array.from({ length: N }, (_, i) =>
      JSON.stringify({ id: `s${i}`, input: i, target: String(i * 2) }),
    );
    writeFileSync(join(t.dir, "data.jsonl"), rows.join("\n") + "\n");

    const started = await collectSse(await t.post("/api/runs", { eval: "paged-api" }));
    const runId = String(started[0]?.data.runId);
    await t.executions.idle();
    expect((await own.store.runs.get(runId))?.status).toBe("errored");
    // Executed from the snapshot's pages, the file read a page at a time into it.
    expect(watch.calls).toContain("samplePages");
    expect(watch.calls.filter((c) => c === "getSamples")).toEqual([]);
    const errored = Math.ceil(N / 9);
    expect(await own.store.reads.countKeys(runId)).toMatchObject({ remaining: errored });

    failing = false;
    watch.calls.length = 0;
    const resumed = await collectSse(await t.post(`/api/runs/${runId}/resume`, {}));
    await t.executions.idle();
    console.log(
      JSON.stringify(resumed.map((e) => [e.event, JSON.stringify(e.data).slice(0, 300)]).slice(-3)),
    );
    const finished = resumed.find((e) => e.event === "completed")?.data as
      { status: string; plan: { preserved: number; errored: number } } | undefined;
    expect(finished?.status).toBe("completed");
    expect(finished?.plan).toMatchObject({ preserved: N - errored, errored });
    expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
    expect(watch.calls).toContain("samplePages");
    const attempts = await own.store.reads.listAttempts(runId);
    expect(attempts).toHaveLength(N + errored);
    expect(attempts.filter((a) => a.status === "scored")).toHaveLength(N);
  });
});
