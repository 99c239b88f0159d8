import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "../../test/helpers/postgres.js";
import { withFigures } from "../runs/list-run-figures.js";
import type { ListedRun } from "../runs/read-run.js";
import { life } from "../store/contract/figures.js";
import { openPostgresStore } from "../store/postgres/index.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/types.js";
import { figuresReport } from "./figures-report.js";
import { foldedReport, storedReport } from "./report.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function sqlite(): Promise<Store> {
  const dir = await mkdtemp(join(tmpdir(), "stet-figures-"));
  const store = openSqliteStore(join(dir, "stet.db"));
  cleanups.push(
    () => rm(dir, { recursive: true, force: true }),
    () => store.close(),
  );
  return store;
}

function postgres(): Store {
  const { schema, drop } = testSchema();
  const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
  cleanups.push(drop, () => store.close());
  return store;
}

describe.each([
  ["sqlite", sqlite, false],
  ["postgres", async () => postgres(), SKIP_POSTGRES],
] as const)("a stored report from the store's figures (%s)", (_name, open, skip) => {
  it.skipIf(skip).each([11, 12, 13, 14])(
    "is deep-equal to the report folded from every attempt, at every step of a run's life (seed %i)",
    async (seed) => {
      const store = await open();
      let fast = 0;
      const checks = await life(store, seed, seed % 2 === 0, async (run) => {
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
      });
      expect(fast).toBe(checks);
    },
  );
});
