import { afterEach, beforeEach, describe } from "vitest";
import { describeAttemptContract } from "./contract/attempts.js";
import { describeBatchContract } from "./contract/batches.js";
import { describeCacheContract } from "./contract/cache.js";
import { describeReviewContract } from "./contract/reviews.js";
import { describeCancelContract } from "./contract/cancel.js";
import type { HarnessRef, StoreHarness } from "./contract/fixtures.js";
import { describeFiguresContract } from "./contract/figures.js";
import { describeJournalContract } from "./contract/journal.js";
import { describeJournalPrefixContract } from "./contract/journal-prefix.js";
import { describeLeaseContract, describeSeededLeaseContract } from "./contract/leases.js";
import { describeLimitContract } from "./contract/limits.js";
import { describeOwnershipContract } from "./contract/ownership.js";
import { describePagedRunContract } from "./contract/paged-runs.js";
import { describeRatesContract } from "./contract/rates.js";
import { describeReadModelContract } from "./contract/read-model.js";
import { describeRunContract } from "./contract/runs.js";
import { describeScoringContract } from "./contract/scorings.js";
import { describeSpendContract } from "./contract/spend.js";
import { describeUsageContract } from "./contract/usage.js";
import type { Store } from "./types.js";

export type { StoreHarness } from "./contract/fixtures.js";

/**
 * The behaviour every Store adapter must have, one section per sub-port (runs, attempts, reads,
 * journal, leases, cache, reviews, rates). Each adapter's test file calls it once with a factory that opens a fresh,
 * empty store; every case gets its own.
 *
 * @example
 * describeStoreContract("sqlite", async () => {
 *   const path = join(await mkdtemp(join(tmpdir(), "stet-")), "stet.db");
 *   return { store: openSqliteStore(path), connect: async () => openSqliteStore(path), cleanup };
 * });
 */
export function describeStoreContract(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`Store contract: ${name}`, () => {
    let harness: StoreHarness | undefined;
    beforeEach(async () => {
      harness = await makeStore();
    });
    afterEach(async () => {
      await harness?.cleanup();
      harness = undefined;
    });
    const ref: HarnessRef = {
      get store(): Store {
        if (!harness) throw new Error("the store harness is only available inside a test");
        return harness.store;
      },
      connect: () => {
        if (!harness) throw new Error("the store harness is only available inside a test");
        return harness.connect();
      },
    };
    // One section per sub-port of the Store (types.ts); a new sub-port brings its own.
    describe("runs", () => {
      describeRunContract(ref);
      describePagedRunContract(ref);
      describeOwnershipContract(ref);
      describeCancelContract(ref);
    });
    describe("attempts", () => {
      describeAttemptContract(ref);
      describeScoringContract(ref);
      describeUsageContract(ref);
      describeLimitContract(ref);
    });
    describe("reads", () => {
      describeReadModelContract(ref);
      describeSpendContract(ref);
      describeFiguresContract(ref);
    });
    describe("journal", () => {
      describeJournalContract(ref);
      describeJournalPrefixContract(ref);
    });
    describe("leases", () => describeLeaseContract(ref));
    describe("seeded leases", () => describeSeededLeaseContract(ref));
    describe("cache", () => describeCacheContract(ref));
    describe("reviews", () => describeReviewContract(ref));
    describe("rates", () => describeRatesContract(ref));
    describe("batches", () => describeBatchContract(ref));
  });
}
