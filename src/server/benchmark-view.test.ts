import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { draft, newRun, scoringOf } from "../store/contract/fixtures.js";
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
});
