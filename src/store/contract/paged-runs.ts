import { describe, expect, it } from "vitest";
import type { SampleRecord } from "../../core/types.js";
import { requireLeases } from "../types.js";
import { type HarnessRef, inPages, owner, runConfig, sampleRecords } from "./fixtures.js";

/** Creating a run from a paged snapshot (`NewRun.samples` as pages): all of it, or no run. */
export function describePagedRunContract(h: HarnessRef): void {
  describe("a snapshot in pages", () => {
    const create = (id: string, samples: SampleRecord[] | AsyncIterable<SampleRecord[]>) =>
      h.store.runs.create({ id, config: runConfig(), samples, owner: owner() });
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);

    it("creates the snapshot the array creates, whatever the page size", async () => {
      const records = sampleRecords(ids(2_500));
      const whole = await create("whole", records);
      for (const [id, size] of [
        ["sevens", 7],
        ["thousands", 1_000],
        ["one", 2_500],
      ] as const) {
        const run = await create(id, inPages(records, size));
        expect(run.sampleCount).toBe(whole.sampleCount);
        expect(await h.store.reads.getSamples(id)).toEqual(await h.store.reads.getSamples("whole"));
        expect(await h.store.reads.countKeys(id)).toEqual(await h.store.reads.countKeys("whole"));
      }
    });

    it("creates no run when the pages fail, and the id stays free", async () => {
      const records = sampleRecords(ids(100));
      async function* failing() {
        yield* inPages(records.slice(0, 60), 20);
        throw new Error("the dataset's disk went away");
      }
      await expect(create("broken", failing())).rejects.toThrow("the dataset's disk went away");
      expect(await h.store.runs.get("broken")).toBeUndefined();
      await expect(h.store.reads.getSamples("broken")).rejects.toMatchObject({
        code: "E_RUN_NOT_FOUND",
      });
      expect(await create("broken", inPages(records, 30))).toMatchObject({ sampleCount: 100 });
      expect(await h.store.reads.getSamples("broken")).toHaveLength(100);
    });

    it.each([
      ["in a later page", 6_000, 5_500, 2, 7],
      ["within one page", 20, 12, 9, 7],
      ["within one statement of a page", 40, 20, 18, 32],
    ])(
      "refuses a repeated id %s, naming both positions, and creates nothing",
      async (_label, n, at, of, size) => {
        // Sample `of` again at position `at`: in another of PostgreSQL's 5,000-row statements,
        // in one page, in one of SQLite's 16-row statements.
        const records = sampleRecords(ids(n));
        records.splice(at, 0, ...sampleRecords([`s${of}`]));
        let closed = false;
        async function* pages() {
          try {
            yield* inPages(records, size);
          } finally {
            closed = true;
          }
        }
        await expect(create("twice", pages())).rejects.toMatchObject({
          code: "E_DUPLICATE_ID",
          message: expect.stringContaining(`"s${of}"`),
          details: { id: `s${of}`, positions: [of, at] },
        });
        expect(closed).toBe(true);
        expect(await h.store.runs.get("twice")).toBeUndefined();
        expect(await create("twice", inPages(sampleRecords(ids(3)), 2))).toMatchObject({
          sampleCount: 3,
        });
      },
    );

    it("creates a run of no samples from no pages, as from an empty array", async () => {
      const empty = await create("empty", inPages([], 10));
      expect(empty.sampleCount).toBe((await create("empty-array", [])).sampleCount);
      expect(empty.sampleCount).toBe(0);
      expect(await h.store.reads.getSamples("empty")).toEqual([]);
    });

    it("creates two runs from pages at once", async () => {
      const [a, b] = await Promise.all([
        create("a", inPages(sampleRecords(ids(50)), 3)),
        create("b", inPages(sampleRecords(ids(40)), 4)),
      ]);
      expect([a.sampleCount, b.sampleCount]).toEqual([50, 40]);
      expect(await h.store.reads.getSamples("a")).toHaveLength(50);
      expect(await h.store.reads.getSamples("b")).toHaveLength(40);
    });

    it("creates a distributed run's leases from pages", async () => {
      const run = await h.store.runs.create({
        id: "dist",
        config: runConfig({ distributed: true, epochs: 2 }),
        samples: inPages(sampleRecords(ids(20)), 3),
        owner: owner("creator"),
      });
      await h.store.runs.release("dist", run.owner!.token, "interrupted");
      expect(await requireLeases(h.store).reopen("dist")).toBe(true);
      const worker = { ...owner("w"), concurrency: 4, leaseMs: 30_000 };
      await requireLeases(h.store).register("dist", worker);
      const { keys } = await requireLeases(h.store).claim("dist", worker.token, 100);
      expect(keys).toHaveLength(40);
    });
  });
}
