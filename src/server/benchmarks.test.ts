import { afterEach, describe, expect, it } from "vitest";
import { gatedEval, testApp, waitFor } from "../../test/helpers/server-app.js";
import { collectSse, readSse, readUntil, type SseEvent } from "../../test/helpers/sse.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface BenchmarkBody {
  id: string;
  runs: { id: string; model: string | null; counts: { done: number; remaining: number } }[];
  samples: { total: number; entries: { sampleId: string; runs: Record<string, unknown> }[] };
}

describe("benchmarks", () => {
  it("lists a run resumed twice once, beside the other model's run", async () => {
    const gate = gatedEval({ name: "bench", n: 6, concurrency: 2 });
    const t = testApp([gate.ev]);
    cleanups.push(t.cleanup);

    /** Lets the stream's run commit `k` more, then cancels it with its 2 calls in flight. */
    const interruptAfter = async (stream: AsyncGenerator<SseEvent>, runId: string) => {
      await waitFor(async () => (gate.waiting() === 2 ? true : undefined), "2 blocked calls");
      expect((await t.post(`/api/runs/${runId}/cancel`)).status).toBe(202);
      gate.allow(2);
      for await (const _ of stream);
      await t.executions.idle();
    };

    gate.allow(1);
    const first = readSse(await t.post("/api/runs", { eval: "bench", model: "m1" }));
    const [started] = await readUntil(first, "started");
    const runId = String(started?.data.runId);
    await interruptAfter(first, runId);
    await interruptAfter(readSse(await t.post(`/api/runs/${runId}/resume`)), runId);
    gate.allow();
    const last = await collectSse(await t.post(`/api/runs/${runId}/resume`));
    expect(last.at(-1)).toMatchObject({ data: { status: "completed" } });
    const other = await collectSse(await t.post("/api/runs", { eval: "bench", model: "m2" }));
    const otherId = String(other[0]?.data.runId);

    const listed = await t.json("/api/benchmarks");
    expect(listed.body).toEqual({
      benchmarks: [
        { id: "bench", evalName: "bench", runs: 2, running: 0, lastCreatedAt: expect.any(String) },
      ],
    });
    const { status, body } = await t.json<BenchmarkBody>("/api/benchmarks/bench?limit=2");
    expect(status).toBe(200);
    expect(body.runs.map((r) => [r.id, r.model, r.counts.done])).toEqual([
      [otherId, "m2", 6],
      [runId, "m1", 6],
    ]);
    expect(body.samples.total).toBe(6);
    expect(body.samples.entries).toHaveLength(2);
    expect(body.samples.entries[0]).toMatchObject({
      sampleId: "g00",
      differs: false,
      runs: {
        [runId]: { scored: 1, errored: 0, epochs: 1, scores: { exact: 1 } },
        [otherId]: { scored: 1, scores: { exact: 1 } },
      },
    });
    const runs = await t.json<{ runs: { id: string }[] }>("/api/runs?benchmark=bench");
    expect(runs.body.runs.map((r) => r.id).sort()).toEqual([runId, otherId].sort());
  });
});
