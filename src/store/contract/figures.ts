import { describe, expect, it } from "vitest";
import { OutcomeFold, type FoldResult } from "../../core/outcome-fold.js";
import type { AttemptDraft, Key, Reducer, RerunRequest, Run } from "../../core/types.js";
import { requireLeases, type AttemptHead, type Store } from "../types.js";
import {
  draft,
  fingerprintOf,
  owner,
  runConfig,
  sampleRecords,
  type HarnessRef,
} from "./fixtures.js";

type Rnd = () => number;

function random(seed: number): Rnd {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** A run's figures recomputed from every stored attempt and scoring: what a report did before. */
export async function recomputed(store: Store, run: Run): Promise<FoldResult> {
  const samples = await store.reads.getSamples(run.id);
  const fingerprints = new Map(samples.map((r) => [r.sample.id, r.fingerprint]));
  const fold = new OutcomeFold({
    fingerprintOf: (id) => fingerprints.get(id),
    scorers: run.config.scorers,
    reducer: run.config.reducer,
    isNow: () => false,
    reused: "imported",
  });
  for (const head of await store.reads.listAttemptHeads(run.id)) fold.add(head);
  for (const scoring of await store.reads.listScorings(run.id)) fold.addScoring(scoring, false);
  return fold.finish();
}

/** The same figures as the store keeps them, commit by commit. */
export async function kept(store: Store, run: Run): Promise<FoldResult> {
  const read = await store.reads.readFigures(run.id, run.config.reducer);
  return read.figures.report(run.config.scorers, read.examples);
}

/** A random attempt of a key: scored, limited, a solver's or a scorer's error, imported. */
function randomDraft(rnd: Rnd, key: Key, fingerprint: string): AttemptDraft {
  const roll = rnd();
  const cost = Math.floor(rnd() * 1e6) / 7e9;
  const usage =
    rnd() < 0.15
      ? null
      : { inputTokens: 10, outputTokens: 2, ...(rnd() < 0.1 ? {} : { costUsd: cost }) };
  const common = {
    fingerprint,
    usage,
    ...(rnd() < 0.1 ? {} : { retries: Math.floor(rnd() * 3) }),
    provenance:
      rnd() < 0.15
        ? { kind: "imported" as const, source: "sha256:backup" }
        : { kind: "executed" as const },
  };
  const exact = { scorer: "exact", value: Math.round(rnd() * 5) / 5 };
  if (roll < 0.55) {
    const limited = rnd() < 0.1 ? { limit: { limit: "turns" as const, value: 4, used: 4 } } : {};
    return draft(key, {
      ...common,
      ...limited,
      scores: [exact, { scorer: "judge", value: rnd() < 0.5 ? 1 : 0 }],
    });
  }
  if (roll < 0.75) {
    return draft(key, {
      ...common,
      status: "error",
      scores: [exact, { scorer: "judge", value: null, error: "judge threw" }],
      error: { type: "scorer", scorer: "judge", message: "judge threw\n  at judge.ts:1" },
    });
  }
  const type = rnd() < 0.5 ? "provider" : "timeout";
  return draft(key, {
    ...common,
    status: "error",
    output: null,
    scores: [],
    error: { type, message: `${type} failed on ${key.sampleId}#${key.epoch}` },
  });
}

/**
 * A run's life through the store's commit paths in random order: an owner's batches, kills (the
 * owner lost, a new one claims: a resume), rescores, changed samples, imports (imported
 * attempts), a distributed run's workers; after each step the figures the store keeps equal a
 * recomputation from every stored row.
 */
export async function life(
  store: Store,
  seed: number,
  distributed: boolean,
  /** Told the run after each step, to check what it likes; the figures' check by default. */
  check: (run: Run) => Promise<void> = async (run) => {
    expect(await kept(store, run)).toStrictEqual(await recomputed(store, run));
  },
  /** Whether a resume also asks keys to re-run (`RunConfig.rerun`, as `--rerun` records it). */
  reruns = false,
): Promise<number> {
  const rnd = random(seed);
  const reducers: Reducer[] = ["mean", "max", "pass@2", "mode"];
  const ids = Array.from({ length: 10 }, (_, i) => `s${i}`);
  let me = owner(`o${seed}`);
  const config = runConfig({
    epochs: 1 + Math.floor(rnd() * 3),
    reducer: reducers[seed % reducers.length]!,
    scorers: ["exact", "judge"],
    ...(distributed ? { distributed: true } : {}),
  });
  let run = await store.runs.create({
    id: `fig-${seed}`,
    config,
    samples: sampleRecords(ids),
    owner: me,
  });
  const version = new Map(ids.map((id) => [id, 1]));
  const fingerprint = (id: string) => `fp:${id}:v${version.get(id)!}`;
  let token = me.token;
  // A distributed run's keys are leased to two workers; each commits its own keys.
  const holder = distributed
    ? await leaseToWorkers(store, run.id, token, seed)
    : new Map<string, string>();
  const tokenOf = (k: Key) => holder.get(`${k.sampleId}#${k.epoch}`) ?? token;
  let checks = 0;
  for (let step = 0; step < 30; step++) {
    const roll = rnd();
    const heads = await store.reads.listAttemptHeads(run.id);
    // A key asked to re-run takes a new attempt (marked `rerunAfter`) until one after the
    // attempt it follows is scored.
    const after = new Map([...(await recordedAsks(store, run.id))].map(([k, r]) => [k, r.after]));
    const scoredNow = new Set(
      heads
        .filter((a) => a.status === "scored" && a.fingerprint === fingerprint(a.sampleId))
        .filter((a) => a.attempt > (after.get(`${a.sampleId}#${a.epoch}`) ?? 0))
        .map((a) => `${a.sampleId}#${a.epoch}`),
    );
    if (roll < 0.6) {
      const batch: AttemptDraft[] = [];
      for (let i = 0; i < 1 + Math.floor(rnd() * 6); i++) {
        const key = {
          sampleId: ids[Math.floor(rnd() * ids.length)]!,
          epoch: 1 + Math.floor(rnd() * config.epochs),
        };
        const k = `${key.sampleId}#${key.epoch}`;
        if (scoredNow.has(k)) continue;
        const d = randomDraft(rnd, key, fingerprint(key.sampleId));
        if (d.status === "scored") scoredNow.add(k);
        const follows = after.get(k);
        batch.push(follows === undefined ? d : { ...d, rerunAfter: follows });
      }
      const byToken = new Map<string, AttemptDraft[]>();
      for (const d of batch) byToken.set(tokenOf(d), [...(byToken.get(tokenOf(d)) ?? []), d]);
      // Keys dispatched and not committed yet (in flight when a kill comes): the plan's.
      const inflight = distributed
        ? []
        : [{ sampleId: ids[Math.floor(rnd() * ids.length)]!, epoch: 1 }].filter(
            (k) => !batch.some((d) => d.sampleId === k.sampleId && d.epoch === k.epoch),
          );
      if (byToken.size === 0 && !distributed) byToken.set(token, []);
      for (const [t, drafts] of byToken) {
        await store.attempts.record(run.id, t, drafts, t === token ? { inflight } : {});
      }
    } else if (roll < 0.75) {
      // A worker's scored key has no lease left: a worker scores its scorer errors again.
      const withOutput = heads
        .filter((a) => a.status === "scored" || a.error?.type === "scorer")
        .filter(
          (a) =>
            !distributed ||
            (a.error?.type === "scorer" && !scoredNow.has(`${a.sampleId}#${a.epoch}`)),
        );
      const target = withOutput[Math.floor(rnd() * withOutput.length)];
      if (!target) continue;
      const passes = rnd() < 0.6;
      await store.attempts.recordScorings(run.id, tokenOf(target), [
        {
          sampleId: target.sampleId,
          epoch: target.epoch,
          attempt: target.attempt,
          pass: `p${step}`,
          status: passes ? "scored" : "error",
          scores: [
            { scorer: "exact", value: Math.round(rnd() * 4) / 4 },
            passes
              ? { scorer: "judge", value: 1 }
              : { scorer: "judge", value: null, error: "threw" },
          ],
          rescored: ["judge"],
          scorerConfig: {},
          error: passes ? null : { type: "scorer", scorer: "judge", message: "threw again" },
          usage: { inputTokens: 5, outputTokens: 1, costUsd: Math.floor(rnd() * 1e5) / 3e9 },
          durationMs: 3,
          scoredAt: "2025-01-02T00:00:00.000Z",
          ...(rnd() < 0.5 ? { retries: 1 } : {}),
        },
      ]);
    } else if (roll < 0.85 && !distributed) {
      const id = ids[Math.floor(rnd() * ids.length)]!;
      version.set(id, version.get(id)! + 1);
      const [changed] = sampleRecords([id], version.get(id));
      await store.runs.updateSamples(run.id, token, [
        { ...changed!, fingerprint: fingerprint(id) },
      ]);
    } else if (!distributed) {
      // Killed: the owner is gone; a resume claims the run with a new owner.
      await store.runs.interruptOrphan(run.id, token, "killed");
      me = owner(`o${seed}-${step}`);
      expect(await store.runs.claim(run.id, me, null)).toBe(true);
      token = me.token;
      if (reruns && rnd() < 0.7) await askReruns(store, run, token, heads, rnd);
    }
    if (rnd() < 0.3) {
      // A person reviews a stored attempt (any: a later one may supersede it as the outcome).
      const stored = await store.reads.listAttemptHeads(run.id);
      const target = stored[Math.floor(rnd() * stored.length)];
      if (target) {
        await store.reviews.record(run.id, [
          {
            sampleId: target.sampleId,
            epoch: target.epoch,
            attempt: target.attempt,
            scorer: "human",
            reviewer: rnd() < 0.5 ? "ann" : "bob",
            value: Math.round(rnd() * 4) / 4,
            note: null,
            createdAt: "2025-01-03T00:00:00.000Z",
          },
        ]);
      }
    }
    run = (await store.runs.get(run.id))!;
    await check(run);
    checks++;
  }
  return checks;
}

/** A distributed run's keys leased to two workers: each key's holder's token. */
async function leaseToWorkers(
  store: Store,
  runId: string,
  token: string,
  seed: number,
): Promise<Map<string, string>> {
  const holder = new Map<string, string>();
  await store.runs.release(runId, token, "interrupted");
  await requireLeases(store).reopen(runId);
  for (const name of ["a", "b"]) {
    const worker = { ...owner(`w${seed}${name}`), concurrency: 16, leaseMs: 60_000 };
    await requireLeases(store).register(runId, worker);
    const { keys } = await requireLeases(store).claim(runId, worker.token, 16);
    for (const k of keys) holder.set(`${k.sampleId}#${k.epoch}`, worker.token);
  }
  return holder;
}

/** The run's re-run requests by key (`s1#2`). */
async function recordedAsks(store: Store, runId: string): Promise<Map<string, RerunRequest>> {
  const asked = new Map<string, RerunRequest>();
  for await (const page of store.reads.rerunPages(runId)) {
    for (const r of page) asked.set(`${r.sampleId}#${r.epoch}`, r);
  }
  return asked;
}

/** A resume's re-run request (as `--rerun` records it): a few keys, each after its last attempt. */
async function askReruns(
  store: Store,
  run: Run,
  token: string,
  heads: readonly AttemptHead[],
  rnd: Rnd,
): Promise<void> {
  const asked = await recordedAsks(store, run.id);
  for (let i = 0; i < 1 + Math.floor(rnd() * 3); i++) {
    const key = {
      sampleId: `s${Math.floor(rnd() * run.sampleCount)}`,
      epoch: 1 + Math.floor(rnd() * run.config.epochs),
    };
    const own = heads.filter((a) => a.sampleId === key.sampleId && a.epoch === key.epoch);
    const last = Math.max(0, ...own.map((a) => a.attempt));
    asked.set(`${key.sampleId}#${key.epoch}`, { ...key, after: last });
  }
  await store.runs.updateConfig(run.id, token, run.config, [...asked.values()]);
}

/**
 * Commits that each touch every one of 40 samples (more than one statement's worth of sample
 * rows in the SQLite adapter, which writes them 16 to a statement): after each, the figures the
 * store keeps equal a recomputation, which they cannot if a sample's row was written wrong, as
 * the next commit takes that row back out of the run's figures.
 */
async function wideCommits(store: Store): Promise<void> {
  const rnd = random(99);
  const ids = Array.from({ length: 40 }, (_, i) => `w${i}`);
  const me = owner("o-wide");
  const config = runConfig({ epochs: 2, reducer: "mean", scorers: ["exact", "judge"] });
  const run = await store.runs.create({
    id: "fig-wide",
    config,
    samples: sampleRecords(ids),
    owner: me,
  });
  const scored = new Set<string>();
  for (let commit = 0; commit < 3; commit++) {
    const drafts = ids.flatMap((sampleId) =>
      [1, 2]
        .filter((epoch) => !scored.has(`${sampleId}#${epoch}`) && rnd() < 0.8)
        .map((epoch) => randomDraft(rnd, { sampleId, epoch }, fingerprintOf(sampleId))),
    );
    for (const d of drafts) if (d.status === "scored") scored.add(`${d.sampleId}#${d.epoch}`);
    await store.attempts.record(run.id, me.token, drafts);
    expect(await kept(store, run)).toStrictEqual(await recomputed(store, run));
  }
}

/** The per-run figures (SQLite migration 17, PostgreSQL 16): kept in each commit, exact. */
export function describeFiguresContract(h: HarnessRef): void {
  describe("run figures", () => {
    it.each([1, 2, 3, 4, 5, 6])(
      "equal a recomputation after every commit, kill, resume, rescore, changed sample and import (seed %i)",
      async (seed) => {
        expect(await life(h.store, seed, false)).toBeGreaterThan(20);
      },
    );

    it("equal a recomputation after commits that each write many samples' figures", async () => {
      await wideCommits(h.store);
    });

    it.each([7, 8])(
      "equal a recomputation through a distributed run's workers (seed %i)",
      async (seed) => {
        expect(await life(h.store, seed, true)).toBeGreaterThan(20);
      },
    );
  });
}
