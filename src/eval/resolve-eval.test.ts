import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScorerArgs } from "../core/eval.js";
import { defineEval } from "./define-eval.js";
import { resolveEval } from "./resolve-eval.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "stet-resolve-"));
  const rows = Array.from({ length: 5 }, (_, i) => JSON.stringify({ n: i }));
  await writeFile(join(dir, "numbers.jsonl"), rows.join("\n"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function exact({ output, sample }: ScorerArgs) {
  return output === sample.target;
}

const base = {
  name: "numbers",
  dataset: "numbers.jsonl",
  sample: (row: { n?: unknown }) => ({ id: `n${String(row.n)}`, input: Number(row.n) }),
  solver: (sample: { input: unknown }) => String(sample.input),
  scorers: [exact, { name: "always", score: () => 1 }],
};

describe("resolveEval", () => {
  it("loads samples against baseDir, names scorers and fills in defaults", async () => {
    const resolved = await resolveEval(defineEval(base), { baseDir: dir });
    expect(resolved).toMatchObject({
      name: "numbers",
      solver: base.solver,
      epochs: 1,
      reducer: "mean",
      concurrency: 8,
      retries: 0,
    });
    expect(resolved).not.toHaveProperty("timeoutMs");
    expect(resolved.samples.map((r) => r.sample.id)).toEqual(["n0", "n1", "n2", "n3", "n4"]);
    expect(resolved.samples[0]?.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(resolved.scorers.map((s) => s.name)).toEqual(["exact", "always"]);
    expect(resolved.scorers[0]?.score).toBe(exact);
  });

  it("lets a run's overrides win over the eval's own options", async () => {
    const ev = defineEval({ ...base, epochs: 2, concurrency: 3, timeoutMs: 500 });
    expect(await resolveEval(ev, { baseDir: dir })).toMatchObject({
      epochs: 2,
      concurrency: 3,
      timeoutMs: 500,
    });
    expect(
      await resolveEval(ev, { baseDir: dir, epochs: 5, concurrency: 1, timeoutMs: 90 }),
    ).toMatchObject({ epochs: 5, concurrency: 1, timeoutMs: 90 });
  });

  it("keeps the options the eval sets", async () => {
    const options = {
      epochs: 4,
      reducer: "pass@2",
      concurrency: 2,
      timeoutMs: 900,
      retries: 1,
    } as const;
    const resolved = await resolveEval(defineEval({ ...base, ...options }), { baseDir: dir });
    expect(resolved).toMatchObject(options);
  });

  it("applies limit as the first N samples in dataset order", async () => {
    const resolved = await resolveEval(defineEval(base), { baseDir: dir, limit: 2 });
    expect(resolved.samples.map((r) => r.sample.id)).toEqual(["n0", "n1"]);
  });

  it("rejects a limit that is not a positive integer", async () => {
    await expect(resolveEval(defineEval(base), { baseDir: dir, limit: 0 })).rejects.toMatchObject({
      code: "E_CONFIG",
    });
  });

  it("surfaces dataset errors", async () => {
    const ev = defineEval({ ...base, dataset: "missing.jsonl" });
    await expect(resolveEval(ev, { baseDir: dir })).rejects.toMatchObject({ code: "E_DATASET" });
  });
});
