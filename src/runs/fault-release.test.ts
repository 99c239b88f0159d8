import { afterEach, describe, expect, it } from "vitest";
import type { EngineEval } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { runEval } from "./start-run.js";

// An error no one expects, thrown while a run executes, must not leave the run `running` under
// an owner that has given up on it: it is released `interrupted` (resumable), with the error as
// its note, and nothing this process started keeps running after the error is thrown.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const records = (n: number): SampleRecord[] =>
  Array.from({ length: n }, (_, i) => {
    const sample = { id: `s${i}`, input: String(i), target: String(i) };
    return { sample, fingerprint: fingerprintSample(sample) };
  });

describe("a run whose execution throws an unexpected error", () => {
  it("is released interrupted with the error as its note, nothing left in flight", async () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    let inflight = 0;
    const ev: EngineEval = {
      name: "listener",
      samples: records(12),
      solver: async (sample, ctx) => {
        inflight++;
        try {
          await new Promise((resolve, reject) => {
            const timer = setTimeout(resolve, 20);
            ctx.signal.addEventListener("abort", () => {
              clearTimeout(timer);
              reject(ctx.signal.reason as Error);
            });
          });
          return String(sample.input);
        } finally {
          inflight--;
        }
      },
      scorers: [{ name: "exact", score: ({ sample, output }) => output === sample.target }],
      epochs: 1,
      reducer: "mean",
      concurrency: 3,
      retries: 0,
    };
    let committed = 0;
    // A real failure of a shell's listener: a progress renderer that throws on its 2nd update.
    const onEvent = (event: { type: string }) => {
      if (event.type === "attempt-committed" && ++committed === 2) {
        throw new Error("progress renderer failed");
      }
    };
    const error = await runEval({ store: t.store, eval: ev, onEvent }).catch((e: unknown) => e);
    expect(error).toMatchObject({ message: "progress renderer failed" });
    // Thrown only once the attempts in flight were aborted and settled.
    expect(inflight).toBe(0);
    const [listed] = await t.store.reads.listRuns();
    expect(listed!.run).toMatchObject({
      status: "interrupted",
      note: "stopped by an error: progress renderer failed",
    });
    expect(listed!.run.owner ?? null).toBeNull();
    const counts = await t.store.reads.countKeys(listed!.run.id);
    expect(counts.remaining).toBeGreaterThan(0);
  });
});
