import { afterEach, describe, expect, it } from "vitest";
import type { EngineEval, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { resumeRun } from "./resume-run.js";
import { runEval } from "./start-run.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** More keys than one page of the source (1,000): seeding them takes three commits. */
const N = 2_500;
const samples: SampleRecord[] = Array.from({ length: N }, (_, i) => {
  const sample = { id: `s${String(i).padStart(4, "0")}`, input: `q${i}`, target: `q${i}` };
  return { sample, fingerprint: fingerprintSample(sample) };
});

const calls = new Map<string, number>();
const solver: SolverFn = async function echo(sample) {
  calls.set(sample.id, (calls.get(sample.id) ?? 0) + 1);
  return {
    output: String(sample.input),
    usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.01 },
  };
};

const ev = (): EngineEval => ({
  name: "reuse-seeding",
  samples,
  solver,
  scorers: [{ name: "same", score: ({ sample, output }) => output === sample.target }],
  epochs: 1,
  reducer: "mean",
  concurrency: 16,
  retries: 0,
});

/** `ev()` with its dataset read a page at a time, as a file of 8 MiB and up is. */
const paged = (): EngineEval => ({
  ...ev(),
  samples: [],
  pages: {
    file: "data.jsonl",
    async *read() {
      for (let i = 0; i < N; i += 700) yield samples.slice(i, i + 700);
    },
    whole: async () => samples,
    whereOf: async (n) => `data.jsonl:${n + 1}`,
  },
});

describe.each([
  ["loaded whole", ev],
  ["read a page at a time", paged],
])("a run whose --reuse seeding was cut short (its dataset %s)", (_name, started) => {
  it("is seeded the rest of the way by its resume, which executes no reused key", async () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    const a = await runEval({ store: t.store, eval: ev() });
    expect(a.status).toBe("completed");
    calls.clear();

    // The store fails the second page of run B's seed: the first 1,000 reused keys are stored.
    let commits = 0;
    const failing: Store = {
      ...t.store,
      attempts: {
        ...t.store.attempts,
        record: (...args) => {
          if (++commits === 2) return Promise.reject(new Error("the disk went away"));
          return t.store.attempts.record(...args);
        },
      },
    };
    await expect(runEval({ store: failing, eval: started(), reuse: a.runId })).rejects.toThrow(
      "the disk went away",
    );
    const [b] = (await t.store.reads.listRuns({ evalName: "reuse-seeding" }))
      .map((l) => l.run)
      .filter((r) => r.id !== a.runId);
    expect(b).toMatchObject({ status: "interrupted" });
    // A key's pick is known once its attempts are read: the paged seed's first page holds 999.
    const seeded = (await t.store.reads.listAttemptHeads(b!.id)).length;
    expect(seeded).toBe(started === ev ? 1_000 : 999);

    const resumed = await resumeRun({ store: t.store, runId: b!.id, eval: ev() });
    expect(resumed.status).toBe("completed");
    expect(calls.size).toBe(0);
    const heads = await t.store.reads.listAttemptHeads(b!.id);
    expect(heads).toHaveLength(N);
    expect(heads.every((h) => h.provenance.kind === "imported")).toBe(true);
    expect(resumed.usage.spentNow.costUsd ?? 0).toBe(0);
  });
});
