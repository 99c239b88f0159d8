import { describe, expect, it } from "vitest";
import {
  draft,
  errorDraft,
  fingerprintOf,
  type HarnessRef,
  newRun,
  sampleRecords,
} from "./fixtures.js";
import type { RunPart } from "../types.js";

const ids = ["b", "a9", "B", "a10", "é"];
// One key's outcome was imported, with no usage: neither executed here nor priced.
const imported = {
  provenance: { kind: "imported" as const, source: "run:r_x#1" },
  usage: null,
};

/** A run of `ids` over two epochs: epoch 1 scored, epoch 2 an error then scored; its id. */
async function recordedRun(h: HarnessRef): Promise<string> {
  const { run, owner: me } = await newRun(h.store, { ids });
  const drafts = [...ids]
    .reverse()
    .flatMap((sampleId) => [
      errorDraft({ sampleId, epoch: 2 }),
      draft({ sampleId, epoch: 1 }, sampleId === "b" ? imported : {}),
      draft({ sampleId, epoch: 2 }),
    ]);
  await h.store.attempts.record(run.id, me.token, drafts);
  return run.id;
}

/** Listing attempts: whole, as heads, as facts, paged, filtered; their order. */
export function describeAttemptListing(h: HarnessRef): void {
  describe("listing", () => {
    describeAttemptParts(h);

    it("orders by sample id (binary), epoch, attempt", async () => {
      const runId = await recordedRun(h);
      const order = (await h.store.reads.listAttempts(runId)).map(
        (a) => `${a.sampleId}#${a.epoch}.${a.attempt}`,
      );
      expect(order).toEqual(
        ["B", "a10", "a9", "b", "é"].flatMap((id) => [`${id}#1.1`, `${id}#2.1`, `${id}#2.2`]),
      );
    });

    it.each([1, 2, 4, 1_000])(
      "pages the attempt heads, their facts, and whole attempts, in the same order, %i at a time",
      async (pageSize) => {
        const runId = await recordedRun(h);
        const pages: number[] = [];
        const heads = [];
        for await (const page of h.store.reads.attemptHeadPages(runId, pageSize)) {
          pages.push(page.length);
          heads.push(...page);
        }
        expect(heads).toEqual(await h.store.reads.listAttemptHeads(runId));
        const facts = [];
        for await (const page of h.store.reads.attemptFactPages(runId, pageSize)) {
          pages.push(page.length);
          facts.push(...page);
        }
        expect(facts).toEqual(
          heads.map((a) => ({
            sampleId: a.sampleId,
            epoch: a.epoch,
            attempt: a.attempt,
            status: a.status,
            fingerprint: a.fingerprint,
            executed: a.provenance.kind === "executed",
            costUsd: a.usage?.costUsd ?? null,
          })),
        );
        expect(facts.filter((f) => !f.executed).map((f) => f.sampleId)).toEqual(["b"]);
        const whole = [];
        for await (const page of h.store.reads.attemptPages(runId, pageSize)) {
          pages.push(page.length);
          whole.push(...page);
        }
        expect(whole).toEqual(await h.store.reads.listAttempts(runId));
        expect(Math.max(...pages)).toBeLessThanOrEqual(pageSize);
      },
    );

    it("keeps a paged read to the attempts committed before its first page", async () => {
      const { run, owner: me } = await newRun(h.store, { ids: ["a", "b", "c", "d"] });
      const key = (sampleId: string) => ({ sampleId, epoch: 1 });
      await h.store.attempts.record(run.id, me.token, [draft(key("a")), draft(key("c"))]);
      const before = await h.store.reads.listAttemptHeads(run.id);
      const seen: string[] = [];
      for await (const page of h.store.reads.attemptHeadPages(run.id, 1)) {
        seen.push(...page.map((head) => head.sampleId));
        // Another worker commits while the pages are read, after and between the read's keys.
        if (seen.length === 1) {
          await h.store.attempts.record(run.id, me.token, [draft(key("b")), draft(key("d"))]);
        }
      }
      expect(seen).toEqual(before.map((head) => head.sampleId));
    });

    it.each([
      [{ sampleId: "a9" }, ["a9#1.1", "a9#2.1", "a9#2.2"]],
      [{ epoch: 1 }, ["B#1.1", "a10#1.1", "a9#1.1", "b#1.1", "é#1.1"]],
      [{ sampleId: "b", epoch: 2 }, ["b#2.1", "b#2.2"]],
      [{ sampleId: "nobody" }, []],
    ])("filters by %o", async (filter, expected) => {
      const runId = await recordedRun(h);
      const listed = await h.store.reads.listAttempts(runId, filter);
      expect(listed.map((a) => `${a.sampleId}#${a.epoch}.${a.attempt}`)).toEqual(expected);
    });

    it("lists heads: the same attempts without output and transcript", async () => {
      const runId = await recordedRun(h);
      const heads = await h.store.reads.listAttemptHeads(runId);
      const full = await h.store.reads.listAttempts(runId);
      expect(heads).toEqual(full.map(({ output: _o, transcript: _t, ...head }) => head));
      expect(heads[0]).not.toHaveProperty("output");
    });

    it("reads stored attempts back identically after later writes to the run", async () => {
      const runId = await recordedRun(h);
      const before = JSON.stringify(await h.store.reads.listAttempts(runId));
      const token = (await h.store.runs.get(runId))?.owner?.token ?? "";
      await h.store.runs.updateSamples(runId, token, sampleRecords(["b"], 2));
      await h.store.attempts.record(runId, token, [
        draft({ sampleId: "b", epoch: 1 }, { fingerprint: fingerprintOf("b", 2), output: "new" }),
      ]);
      const after = await h.store.reads.listAttempts(runId);
      expect(after).toHaveLength(JSON.parse(before).length + 1);
      expect(JSON.stringify(after.filter((a) => a.output !== "new"))).toBe(before);
    });
  });
}

/** A part of the run's attempts (`RunPart`): what a parallel export's readers each read. */
function describeAttemptParts(h: HarnessRef): void {
  it("reads a part of the run's attempts: after a sample id, up to another, up to a commit", async () => {
    const runId = await recordedRun(h);
    const keysOf = async (part: RunPart) => {
      const keys: string[] = [];
      for await (const page of h.store.reads.attemptPages(runId, 2, part)) {
        expect(page.length).toBeLessThanOrEqual(2);
        keys.push(...page.map((a) => `${a.sampleId}#${a.epoch}.${a.attempt}`));
      }
      return keys;
    };
    const all = (await h.store.reads.listAttempts(runId)).map(
      (a) => `${a.sampleId}#${a.epoch}.${a.attempt}`,
    );
    // Byte order: B, a10, a9, b, é.
    expect(await keysOf({ afterSampleId: "" })).toEqual(all);
    expect(await keysOf({ afterSampleId: "a10", lastSampleId: "b" })).toEqual(
      all.filter((k) => k.startsWith("a9#") || k.startsWith("b#")),
    );
    expect(await keysOf({ afterSampleId: "b" })).toEqual(all.filter((k) => k.startsWith("é#")));
    expect(await keysOf({ afterSampleId: "", lastSampleId: "B" })).toEqual(
      all.filter((k) => k.startsWith("B#")),
    );
    expect(await keysOf({ afterSampleId: "é" })).toEqual([]);
    // Attempts committed after `upTo` are not read, whatever part they are in.
    const { cursor } = await h.store.reads.listAttemptsAfter(runId);
    const token = (await h.store.runs.get(runId))?.owner?.token ?? "";
    // A new attempt of two keys (their samples' content changed).
    await h.store.runs.updateSamples(runId, token, sampleRecords(["a9", "é"], 2));
    await h.store.attempts.record(runId, token, [
      draft({ sampleId: "a9", epoch: 1 }, { fingerprint: fingerprintOf("a9", 2) }),
      draft({ sampleId: "é", epoch: 1 }, { fingerprint: fingerprintOf("é", 2) }),
    ]);
    expect(await keysOf({ afterSampleId: "a10", upTo: cursor })).toEqual(
      all.filter((k) => !k.startsWith("B#") && !k.startsWith("a10#")),
    );
    expect(await keysOf({ afterSampleId: "a10", lastSampleId: "a9" })).toEqual([
      "a9#1.1",
      "a9#1.2",
      "a9#2.1",
      "a9#2.2",
    ]);
  });
}
