import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { reduceEpochs } from "../core/aggregate.js";
import { byteOrder } from "../core/keys.js";
import { scoresStand, selectOutcomes } from "../core/outcomes.js";
import type { Store } from "../store/types.js";
import {
  draft,
  errorDraft,
  newRun,
  owner,
  runConfig,
  sampleRecords,
  scoringOf,
} from "../store/contract/fixtures.js";
import { storedReport } from "../engine/report.js";
import { benchmarkView } from "./benchmark-view.js";

const store = storesPerTest();

describe("benchmarkView", () => {
  it("gives each run's spend as its report does: attempts and a judge's scorings", async () => {
    const s = store();
    const { run, owner } = await newRun(s, { config: { evalName: "judged" } });
    const priced = (costUsd: number) => ({ usage: { inputTokens: 10, outputTokens: 2, costUsd } });
    await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s1", epoch: 1 }, priced(0.25)),
      draft({ sampleId: "s2", epoch: 1 }, priced(0.5)),
    ]);
    await s.attempts.recordScorings(run.id, owner.token, [
      scoringOf(
        { sampleId: "s1", epoch: 1 },
        { usage: { inputTokens: 3, outputTokens: 1, costUsd: 1 } },
      ),
    ]);

    const view = await benchmarkView(s, "judged", { limit: 10, offset: 0 }, undefined);
    const report = await storedReport(s, (await s.runs.get(run.id))!);
    expect(report.usage.totalSpent.costUsd).toBe(1.75);
    expect(view?.runs[0]?.cost.spent).toEqual(report.usage.totalSpent);
  });

  it("pages the runs' sample ids in byte order, each cell as a fold of every stored attempt gives it", async () => {
    const s = store();
    // "\uFF21" sorts before "😀" in UTF-8 bytes (EF… < F0…), after it in UTF-16 (FF21 > D83D).
    const a = await newRun(s, {
      ids: ["a", "b", "z", "\uFF21", "😀"],
      config: { evalName: "bm", epochs: 2 },
    });
    await s.attempts.record(a.run.id, a.owner.token, [
      draft({ sampleId: "a", epoch: 1 }),
      errorDraft({ sampleId: "a", epoch: 2 }),
      draft({ sampleId: "b", epoch: 1 }, { scores: [{ scorer: "exact", value: 0 }] }),
      draft({ sampleId: "b", epoch: 2 }),
      errorDraft(
        { sampleId: "z", epoch: 1 },
        {
          scores: [{ scorer: "exact", value: 1 }],
          error: { type: "scorer", message: "judge down" },
        },
      ),
      draft({ sampleId: "😀", epoch: 2 }),
    ]);
    // Another run of the benchmark: "b" with other content (its fingerprint differs), and "c".
    const me = owner();
    const samples = [...sampleRecords(["b"], 2), ...sampleRecords(["c", "\uFF21"])];
    const other = await s.runs.create({
      id: "run-other",
      config: runConfig({ evalName: "bm" }),
      samples,
      owner: me,
    });
    await s.attempts.record(other.id, me.token, [
      draft({ sampleId: "b", epoch: 1 }, { fingerprint: samples[0]!.fingerprint }),
      draft({ sampleId: "c", epoch: 1 }, { scores: [{ scorer: "exact", value: 0.5 }] }),
    ]);

    const expected = await foldedView(s, [a.run.id, other.id]);
    expect(expected.ids).toEqual(["a", "b", "c", "z", "\uFF21", "😀"]);
    for (const offset of [0, 2, 4, 5, 6]) {
      const view = await benchmarkView(s, "bm", { limit: 2, offset }, undefined);
      expect(view!.samples.total).toBe(6);
      const want = expected.ids.slice(offset, offset + 2).map((id) => expected.entries.get(id));
      expect(view!.samples.entries).toEqual(want);
    }
    const [first] = (await benchmarkView(s, "bm", { limit: 2, offset: 1 }, undefined))!.samples
      .entries;
    expect(first).toMatchObject({ sampleId: "b", differs: true });
  });
});

/**
 * The benchmark's sample entries as a fold of every stored sample and attempt computes them (what
 * the view did before it read pages): the reference the paged view must equal.
 */
async function foldedView(s: Store, runIds: string[]) {
  const runs = await Promise.all(
    runIds.map(async (id) => {
      const run = (await s.runs.get(id))!;
      const records = await s.reads.getSamples(id);
      const fingerprints = new Map(records.map((r) => [r.sample.id, r.fingerprint]));
      const outcomes = selectOutcomes(await s.reads.listAttemptHeads(id), fingerprints);
      return { run, records: new Map(records.map((r) => [r.sample.id, r])), outcomes };
    }),
  );
  const ids = [...new Set(runs.flatMap((r) => [...r.records.keys()]))].sort(byteOrder);
  const entries = new Map(
    ids.map((sampleId) => {
      const cells: Record<string, unknown> = {};
      for (const { run, records, outcomes } of runs) {
        const record = records.get(sampleId);
        if (!record) {
          cells[run.id] = null;
          continue;
        }
        const mine = outcomes.filter((o) => o.sampleId === sampleId);
        const standing = mine.filter(scoresStand).sort((x, y) => x.epoch - y.epoch);
        const scores: Record<string, number | null> = {};
        for (const scorer of run.config.scorers) {
          const values = standing.flatMap((o) =>
            o.scores.flatMap((v) => (v.scorer === scorer && v.value !== null ? [v.value] : [])),
          );
          scores[scorer] = values.length > 0 ? reduceEpochs(values, run.config.reducer) : null;
        }
        const scored = mine.filter((o) => o.status === "scored").length;
        cells[run.id] = {
          fingerprint: record.fingerprint,
          scored,
          errored: mine.length - scored,
          epochs: run.config.epochs,
          scores,
        };
      }
      const first = runs.find((r) => r.records.has(sampleId))!.records.get(sampleId)!;
      const prints = new Set(runs.flatMap((r) => r.records.get(sampleId)?.fingerprint ?? []));
      const entry = {
        sampleId,
        input: first.sample.input,
        target: first.sample.target ?? null,
        differs: prints.size > 1,
        runs: cells,
      };
      return [sampleId, entry];
    }),
  );
  return { ids, entries };
}
