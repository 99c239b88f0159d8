import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { OutcomeFold } from "../src/core/outcome-fold.js";
import { comparePaired, mulberry32 } from "../src/core/paired-stats.js";
import type { AttemptDraft, Reducer, Run } from "../src/core/types.js";
import { byteOrder } from "../src/evalport/outcome-pages.js";
import { DIFF_ALPHA, diffRuns, type RunDiff, type ScorerDiff } from "../src/runs/diff-runs.js";
import { draft, owner, runConfig } from "../src/store/contract/fixtures.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { AttemptHead, Store } from "../src/store/types.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./helpers/postgres.js";

// `stet diff` reads both runs a page at a time and merges them; here it must equal the diff
// it replaced, which held both runs whole (every fingerprint and reduced value in maps), over
// random pairs of runs, at page sizes that split them anywhere, on both stores.

/** The diff as it was computed before it streamed: both runs whole, then paired. */
async function inMemoryDiff(store: Store, idA: string, idB: string): Promise<RunDiff> {
  const [a, b] = [await wholeRun(store, idA), await wholeRun(store, idB)];
  const inBoth: string[] = [];
  const changed: string[] = [];
  const onlyInA: string[] = [];
  for (const [id, print] of a.fingerprints) {
    const other = b.fingerprints.get(id);
    if (other === undefined) onlyInA.push(id);
    else if (other === print) inBoth.push(id);
    else changed.push(id);
  }
  const onlyInB = [...b.fingerprints.keys()].filter((id) => !a.fingerprints.has(id));
  const common = a.run.config.scorers.filter((s) => b.run.config.scorers.includes(s));
  inBoth.sort(byteOrder);
  const scorers = common.map((scorer): ScorerDiff => {
    const [ia, ib] = [a.run.config.scorers.indexOf(scorer), b.run.config.scorers.indexOf(scorer)];
    const xs: number[] = [];
    const ys: number[] = [];
    const regressedIds: string[] = [];
    for (const id of inBoth) {
      const x = a.values.get(id)?.[ia] ?? null;
      const y = b.values.get(id)?.[ib] ?? null;
      if (x === null || y === null) continue;
      xs.push(x);
      ys.push(y);
      if (y < x) regressedIds.push(id);
    }
    const { n, ...stats } = comparePaired(xs, ys);
    return {
      scorer,
      paired: n,
      unpaired: inBoth.length - n,
      ...stats,
      significantRegression: (stats.delta ?? 0) < 0 && stats.pValue < DIFF_ALPHA,
      regressedIds,
    };
  });
  return {
    runA: idA,
    runB: idB,
    evalA: a.run.evalName,
    evalB: b.run.evalName,
    scorers,
    onlyInA: onlyInA.sort(byteOrder),
    onlyInB: onlyInB.sort(byteOrder),
    changed: changed.sort(byteOrder),
  };
}

async function wholeRun(store: Store, id: string) {
  const run = (await store.runs.get(id))!;
  const prints = await store.reads.listSampleFingerprints(id);
  const fingerprints = new Map(prints.map((p) => [p.sampleId, p.fingerprint]));
  const values = new Map<string, readonly (number | null)[]>();
  const fold = new OutcomeFold<AttemptHead>({
    fingerprintOf: (sampleId) => fingerprints.get(sampleId),
    scorers: run.config.scorers,
    reducer: run.config.reducer,
    isNow: () => false,
    onSample: (sampleId, reduced) => values.set(sampleId, reduced),
  });
  for (const head of await store.reads.listAttemptHeads(id)) fold.add(head);
  fold.finish();
  return { run, fingerprints, values };
}

// Ids in both orders' trouble spot: astral characters against U+E000–U+FFFF.
const ID_POOL = [
  ...Array.from({ length: 40 }, (_, i) => `s${String(i).padStart(2, "0")}`),
  "\u{1F600}a",
  "\uE000b",
  "\uFFFDc",
  "é",
  "Z",
];

/** A random run of `evalName`: a random part of the pool, random epochs, reducer, attempts. */
async function randomRun(store: Store, id: string, seed: number): Promise<Run> {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const ids = ID_POOL.filter(() => rnd() < 0.7);
  // Some content changes between the runs: the same id with another fingerprint.
  const version = (sampleId: string) => (rnd() < 0.1 ? `${sampleId}:v2` : sampleId);
  const samples = ids.map((sampleId) => ({
    sample: { id: sampleId, input: sampleId },
    fingerprint: `fp:${version(sampleId)}`,
  }));
  const scorerSets = [["exact"], ["exact", "judge"], ["judge", "exact", "extra"]];
  const reducers: Reducer[] = ["mean", "max", "pass@2", "mode", "min"];
  const config = runConfig({
    evalName: "paired",
    epochs: 1 + Math.floor(rnd() * 3),
    reducer: pick(reducers),
    scorers: pick(scorerSets),
  });
  const me = owner(id);
  const run = await store.runs.create({ id, config, samples, owner: me });
  const grid = rnd() < 0.5;
  const value = () => (rnd() < 0.1 ? null : grid ? Math.round(rnd() * 4) / 4 : rnd());
  const drafts: AttemptDraft[] = [];
  for (const s of samples) {
    for (let epoch = 1; epoch <= config.epochs; epoch++) {
      const tries = Math.floor(rnd() * 3);
      for (let attempt = 1; attempt <= tries; attempt++) {
        const key = { sampleId: s.sample.id, epoch };
        const last = attempt === tries;
        const scores = config.scorers.map((scorer) => ({ scorer, value: value() }));
        drafts.push(
          last && rnd() < 0.8
            ? draft(key, { fingerprint: s.fingerprint, scores })
            : draft(key, {
                fingerprint: rnd() < 0.2 ? "fp:stale" : s.fingerprint,
                status: "error",
                output: null,
                scores: rnd() < 0.5 ? [] : scores,
                error: { type: rnd() < 0.5 ? "scorer" : "provider", message: "failed" },
              }),
        );
      }
    }
  }
  if (drafts.length > 0) await store.attempts.record(id, me.token, drafts);
  return run;
}

const stores: [string, () => Promise<Store>][] = [
  [
    "sqlite",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "stet-diff-"));
      const store = openSqliteStore(join(dir, "stet.db"));
      onTestFinished(async () => {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      });
      return store;
    },
  ],
  [
    "postgres",
    async () => {
      const { schema, drop } = testSchema();
      const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
      onTestFinished(async () => {
        await store.close();
        await drop();
      });
      return store;
    },
  ],
];

describe.each(stores)("the streamed diff (%s)", (name, open) => {
  it.skipIf(name === "postgres" && SKIP_POSTGRES)(
    "equals the in-memory diff over random pairs of runs, at any page size",
    async () => {
      const store = await open();
      let compared = 0;
      const seen = { regressed: 0, changed: 0, onlyInA: 0, unpaired: 0, permutation: 0 };
      for (let seed = 1; seed <= 12; seed++) {
        const a = await randomRun(store, `a${seed}`, seed * 2);
        const b = seed % 4 === 0 ? a : await randomRun(store, `b${seed}`, seed * 2 + 1);
        const expected = await inMemoryDiff(store, a.id, b.id);
        for (const s of expected.scorers) {
          seen.regressed += s.regressedIds.length;
          seen.unpaired += s.unpaired;
          if (s.test !== "mcnemar-exact") seen.permutation++;
        }
        seen.changed += expected.changed.length;
        seen.onlyInA += expected.onlyInA.length;
        for (const pageSize of [1, 3, 7, 1000]) {
          expect(await diffRuns(store, a.id, b.id, { pageSize })).toStrictEqual(expected);
          compared++;
        }
      }
      expect(compared).toBe(48);
      // The random runs reach every part of a diff.
      for (const count of Object.values(seen)) expect(count).toBeGreaterThan(0);
    },
  );
});
