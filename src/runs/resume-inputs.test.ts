import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bothStores } from "../../test/helpers/both-stores.js";
import { PINNED_FINGERPRINTS } from "../../test/helpers/pinned-fingerprints.js";
import { planRun } from "../core/plan.js";
import { loadSampleIndex } from "../dataset/load-samples.js";
import type { RerunRequest, Run, SampleRecord } from "../core/types.js";
import { life } from "../store/contract/figures.js";
import { owner, runConfig } from "../store/contract/fixtures.js";
import type { Store } from "../store/types.js";
import { readResumeInputs } from "./resume-inputs.js";

const stores = bothStores();

function random(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** The dataset as a resume finds it: the snapshot with some samples gone and some changed. */
function currentOf(snapshot: readonly SampleRecord[], rnd: () => number, alter: boolean) {
  const current = new Map<string, SampleRecord>();
  for (const record of snapshot) {
    const roll = alter ? rnd() : 1;
    if (roll < 0.1) continue;
    const changed = { ...record, fingerprint: `${record.fingerprint}:edited` };
    current.set(record.sample.id, roll < 0.2 ? changed : record);
  }
  return current;
}

/**
 * The plan as a resume made it before the store could say which samples still have work: the
 * whole snapshot (the dataset's record where the fingerprints match) and every attempt.
 */
async function fullPlan(
  store: Store,
  run: Run,
  current: ReadonlyMap<string, SampleRecord>,
  options: { rerunErrors: boolean; rerunChanged: boolean; rerun?: RerunRequest[] },
) {
  const stored = await store.reads.getSamples(run.id);
  const snapshot = stored.map((r) =>
    current.get(r.sample.id)?.fingerprint === r.fingerprint ? current.get(r.sample.id)! : r,
  );
  const attempts = await store.reads.listAttemptHeads(run.id);
  const inflight = await store.runs.listInflight(run.id);
  const plan = planRun({
    snapshot,
    current,
    epochs: run.config.epochs,
    attempts,
    inflight,
    ...options,
  });
  return { plan, attempts, scoredAny: attempts.some((a) => a.status === "scored") };
}

describe.each(stores)(
  "a resume's plan from the samples the store says are open (%s)",
  (_name, open, skip) => {
    it.skipIf(skip).each([21, 22, 23, 24, 25, 26])(
      "equals the plan made from every attempt, at every step of a random run's life (seed %i)",
      async (seed) => {
        const store = await open();
        const rnd = random(seed);
        let sparse = 0;
        await life(store, seed, seed % 3 === 0, async (run) => {
          const alter = rnd() < 0.4;
          const current = currentOf(await store.reads.getSamples(run.id), rnd, alter);
          const options = { rerunErrors: rnd() < 0.7, rerunChanged: rnd() < 0.5 };
          const full = await fullPlan(store, run, current, options);
          const inputs = await readResumeInputs(store, run, current, true);
          expect(inputs.scoredAny).toBe(full.scoredAny);
          // As planResume plans: a snapshot of the dataset's own records has nothing to compare.
          const own = inputs.snapshot.every((r) => current.get(r.sample.id) === r);
          expect(inputs.allCurrent).toBe(own);
          const plan = planRun({
            snapshot: inputs.snapshot,
            ...(inputs.allCurrent ? {} : { current }),
            epochs: run.config.epochs,
            attempts: inputs.attempts,
            inflight: inputs.inflight,
            ...(inputs.open ? { open: inputs.open } : {}),
            ...options,
          });
          expect(plan).toEqual(full.plan);
          if (inputs.open && inputs.open.size < inputs.snapshot.length) sparse++;
          if (!inputs.open) return;
          // Re-run requests count as open whatever the store said (given their attempts).
          const rerun = full.attempts
            .filter(() => rnd() < 0.2)
            .map((a) => ({ sampleId: a.sampleId, epoch: a.epoch, after: a.attempt }));
          const asked = { ...options, rerun };
          expect(
            planRun({
              snapshot: inputs.snapshot,
              current,
              epochs: run.config.epochs,
              attempts: full.attempts,
              inflight: inputs.inflight,
              open: inputs.open,
              ...asked,
            }),
          ).toEqual((await fullPlan(store, run, current, asked)).plan);
        });
        // The check is of the sparse path: some steps had settled samples left out.
        expect(sparse).toBeGreaterThan(0);
      },
    );
  },
);

describe.each(stores)("a run started before the loader's changes (%s)", (_name, open, skip) => {
  it.skipIf(skip)(
    "finds every sample of its snapshot unchanged in its dataset, as it is loaded now",
    async () => {
      const store = await open();
      const dir = await mkdtemp(join(tmpdir(), "stet-pinned-"));
      try {
        // The snapshot as a run stored it before: fingerprints computed by main at f4bbec0.
        const samples = PINNED_FINGERPRINTS.map(([content, fingerprint], i) => ({
          sample: { id: `p${i}`, ...content },
          fingerprint,
        }));
        const run = await store.runs.create({
          id: "r_before",
          config: runConfig({ epochs: 1 }),
          samples,
          owner: owner(),
        });
        const lines = samples.map(({ sample }) => JSON.stringify(sample));
        await writeFile(join(dir, "data.jsonl"), `${lines.join("\n")}\n`);
        const { byId } = await loadSampleIndex("data.jsonl", { baseDir: dir });
        const inputs = await readResumeInputs(store, run, byId, true);
        expect(inputs.allCurrent).toBe(true);
        expect(inputs.snapshot.map((r) => r.fingerprint).sort()).toEqual(
          samples.map((r) => r.fingerprint).sort(),
        );
        const plan = planRun({ ...inputs, current: byId, epochs: 1 });
        expect(plan.changed).toEqual([]);
        expect(plan.missing).toEqual([]);
        expect(plan.neverStarted).toBe(samples.length);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
