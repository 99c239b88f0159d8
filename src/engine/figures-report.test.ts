import { describe, expect, it } from "vitest";
import { bothStores } from "../../test/helpers/both-stores.js";
import { withFigures } from "../runs/list-run-figures.js";
import type { ListedRun } from "../runs/read-run.js";
import { life } from "../store/contract/figures.js";
import { figuresReport } from "./figures-report.js";
import { foldedReport, storedReport } from "./report.js";

const stores = bothStores();

describe.each(stores)("a stored report from the store's figures (%s)", (_name, open, skip) => {
  // Odd seeds are owned runs, even ones distributed; those with re-run requests are resumed with
  // `--rerun`-like requests (each key's attempts up to the one it follows are history to a plan).
  it.skipIf(skip).each([
    [11, false],
    [12, false],
    [13, false],
    [14, false],
    [21, true],
    [23, true],
    [25, true],
    [27, true],
    [29, true],
    [31, true],
    [33, true],
    [35, true],
  ])(
    "is deep-equal to the report folded from every attempt, at every step of a run's life (seed %i, re-run requests: %s)",
    async (seed, reruns) => {
      const store = await open();
      let fast = 0;
      let asked = 0;
      const checks = await life(
        store,
        seed,
        seed % 2 === 0,
        async (run) => {
          for await (const page of store.reads.rerunPages(run.id)) asked += page.length;
          const folded = await foldedReport(store, run);
          const kept = await figuresReport(store, run, { invocation: false });
          if (kept) fast++;
          expect(kept).toEqual(folded);
          expect(await storedReport(store, run)).toEqual(folded);
          // As an invocation with nothing to do (a resume's settled report) where it gives one.
          const now = await figuresReport(store, run, { invocation: true });
          if (now) expect(now).toEqual(await foldedReport(store, run, { invocation: true }));
          // The runs list's figures (human scorers too) are the report's.
          const [listed] = await withFigures(store, [{ run } as ListedRun]);
          expect(listed!.metrics).toEqual(folded.metrics);
          expect(listed!.spent).toEqual(folded.usage.totalSpent);
        },
        reruns,
      );
      expect(fast).toBe(checks);
      if (reruns) expect(asked).toBeGreaterThan(0);
    },
  );
});
