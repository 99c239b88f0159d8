import { expect, it } from "vitest";
import type { RerunRequest } from "../../core/types.js";
import { draft, errorDraft, type HarnessRef, newRun, runConfig } from "./fixtures.js";

/** A run's re-run requests, kept beside it (`updateConfig`'s `reruns`, `reads.rerunPages`). */
export function rerunRequestCases(h: HarnessRef): void {
  it("replaces a run's re-run requests with its config, read back a page at a time in key order", async () => {
    const { run, owner: me } = await newRun(h.store, { id: "asks" });
    const other = await newRun(h.store, { id: "asks-other" });
    const pages = async (runId: string, size?: number) => {
      const out: RerunRequest[][] = [];
      for await (const page of h.store.reads.rerunPages(runId, size)) out.push(page);
      return out;
    };
    expect(await pages("asks")).toEqual([]);
    // 2,500 requests: more than one page, and ids whose UTF-8 order differs from UTF-16's.
    const ids = ["\u{1F600}", "\uFFFD", "s1", "s10", "s2"];
    const asked = Array.from({ length: 2_500 }, (_, i) => ({
      sampleId: `${ids[i % ids.length]}-${Math.floor(i / 10)}`,
      epoch: 1 + (i % 2),
      after: i % 4,
    }));
    expect(await h.store.runs.updateConfig("asks", me.token, run.config, asked)).toBe(true);
    expect(
      await h.store.runs.updateConfig("asks-other", other.owner.token, run.config, [asked[0]!]),
    ).toBe(true);
    const read = await pages("asks", 1_000);
    expect(read.map((p) => p.length)).toEqual([1_000, 1_000, 500]);
    const byteOrder = (a: RerunRequest, b: RerunRequest) =>
      Buffer.compare(Buffer.from(a.sampleId), Buffer.from(b.sampleId)) || a.epoch - b.epoch;
    expect(read.flat()).toEqual([...asked].sort(byteOrder));
    // The run's config is its own, without the requests.
    expect((await h.store.runs.get("asks"))?.config).toEqual(run.config);
    // Replaced, not added to: the run now has exactly these; the other run keeps its own.
    const fewer = [{ sampleId: "s1-0", epoch: 1, after: 2 }];
    expect(await h.store.runs.updateConfig("asks", me.token, run.config, fewer)).toBe(true);
    expect(await pages("asks")).toEqual([fewer]);
    expect((await pages("asks-other")).flat()).toEqual([asked[0]]);
    // Without `reruns` a config update leaves them; with none, they are gone.
    expect(await h.store.runs.updateConfig("asks", me.token, run.config)).toBe(true);
    expect(await pages("asks")).toEqual([fewer]);
    expect(await h.store.runs.updateConfig("asks", me.token, run.config, [])).toBe(true);
    expect(await pages("asks")).toEqual([]);
  });

  it("reads the requests not done, and lets those done go when the owner releases the run", async () => {
    const { run, owner: me } = await newRun(h.store, { id: "asks-done" });
    await h.store.attempts.record(run.id, me.token, [
      draft({ sampleId: "s1", epoch: 1 }),
      draft({ sampleId: "s3", epoch: 1 }),
      errorDraft({ sampleId: "s2", epoch: 1 }),
    ]);
    const asked = [
      { sampleId: "s1", epoch: 1, after: 0 }, // done: scored attempt 1 follows it
      { sampleId: "s2", epoch: 1, after: 0 }, // open: attempt 1 is an error
      { sampleId: "s3", epoch: 1, after: 1 }, // open: nothing after attempt 1
    ];
    expect(await h.store.runs.updateConfig(run.id, me.token, run.config, asked)).toBe(true);
    expect(await h.store.runs.release(run.id, "not-the-owner", "interrupted")).toBe(false);
    const read = async () => {
      const all: RerunRequest[] = [];
      for await (const page of h.store.reads.rerunPages(run.id)) all.push(...page);
      return all;
    };
    expect(await read()).toEqual(asked);
    // Those not done, read as such (a page of one: the keyset past a done request).
    const open: RerunRequest[] = [];
    for await (const page of h.store.reads.rerunPages(run.id, 1, { open: true }))
      open.push(...page);
    expect(open).toEqual(asked.slice(1));
    // The open ones counted by what places their keys in a plan: s2's outcome an error with an
    // error after the request's attempt, s3's scored with nothing after it.
    const facts = await h.store.reads.rerunFacts(run.id);
    expect(facts.sort((a, b) => String(a.held).localeCompare(String(b.held)))).toEqual([
      { held: "error", heldScorer: false, flying: false, later: "error", keys: 1 },
      { held: "scored", heldScorer: false, flying: false, later: "none", keys: 1 },
    ]);
    expect(await h.store.runs.release(run.id, me.token, "interrupted")).toBe(true);
    expect(await read()).toEqual(asked.slice(1));
  });

  it("refuses re-run requests from a non-owner, malformed or repeating a key, writing nothing", async () => {
    const { run, owner: me } = await newRun(h.store, { id: "asks-bad" });
    const kept = [{ sampleId: "s1", epoch: 2, after: 3 }];
    expect(await h.store.runs.updateConfig("asks-bad", me.token, run.config, kept)).toBe(true);
    const changed = runConfig({ scorers: ["exact", "judge"] });
    expect(await h.store.runs.updateConfig("asks-bad", "not-the-owner", changed, [])).toBe(false);
    for (const bad of [
      [{ sampleId: "s1", epoch: 0, after: 1 }],
      [{ sampleId: "s1", epoch: 1, after: -1 }],
      [{ sampleId: "", epoch: 1, after: 0 }],
      [
        { sampleId: "s2", epoch: 1, after: 0 },
        { sampleId: "s2", epoch: 1, after: 1 },
      ],
    ]) {
      await expect(
        h.store.runs.updateConfig("asks-bad", me.token, changed, bad),
      ).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
    }
    const read: RerunRequest[] = [];
    for await (const page of h.store.reads.rerunPages("asks-bad")) read.push(...page);
    expect(read).toEqual(kept);
    expect((await h.store.runs.get("asks-bad"))?.config).toEqual(run.config);
  });
}

/** Re-run requests asked of a run's stored outcomes (`OutcomeAsk`), resolved by the store. */
export function askedRerunCases(h: HarnessRef): void {
  it("names the keys a re-run asks of the stored outcomes and records them beside the open ones", async () => {
    const { run, owner: me } = await newRun(h.store, { id: "asks-outcomes" });
    const scored = (key: { sampleId: string; epoch: number }, value: number | null) =>
      draft(key, { scores: [{ scorer: "exact", value }] });
    const limit = { limit: "turns" as const, value: 3, used: 3 };
    await h.store.attempts.record(run.id, me.token, [
      scored({ sampleId: "s1", epoch: 1 }, 0), // failed, then an error after it: after 2
      scored({ sampleId: "s1", epoch: 2 }, 1),
      draft(
        { sampleId: "s2", epoch: 1 },
        {
          scores: [
            { scorer: "exact", value: 1 },
            { scorer: "judge", value: 0.5 },
          ],
        },
      ), // failed on its second scorer
      draft({ sampleId: "s2", epoch: 2 }, { limit }), // limited, passing
      errorDraft({ sampleId: "s3", epoch: 1 }), // no outcome scored: asked by neither
      scored({ sampleId: "s3", epoch: 2 }, null), // no score that counts
    ]);
    await h.store.attempts.record(run.id, me.token, [
      errorDraft({ sampleId: "s1", epoch: 1 }, { rerunAfter: 1 }),
    ]);
    const read = async (options: Parameters<typeof h.store.reads.rerunPages>[2], size = 1) => {
      const all: RerunRequest[] = [];
      for await (const page of h.store.reads.rerunPages(run.id, size, options)) all.push(...page);
      return all;
    };
    const failed = [
      { sampleId: "s1", epoch: 1, after: 2 },
      { sampleId: "s2", epoch: 1, after: 1 },
    ];
    const limited = [{ sampleId: "s2", epoch: 2, after: 1 }];
    expect(await read({ asked: { failed: true, limited: false } })).toEqual(failed);
    expect(await read({ asked: { failed: false, limited: true } })).toEqual(limited);
    expect(await read({ asked: { failed: true, limited: true } }, 2)).toEqual([
      ...failed,
      ...limited,
    ]);
    expect(await read({ asked: { failed: false, limited: false } })).toEqual([]);
    // Recorded before: one done (s1#2 scored after it), one open; the open one stays, the done
    // one goes, an asked key's recorded request follows its last attempt now.
    const recorded = [
      { sampleId: "s1", epoch: 1, after: 0 },
      { sampleId: "s1", epoch: 2, after: 0 },
      { sampleId: "s3", epoch: 1, after: 0 },
    ];
    expect(await h.store.runs.updateConfig(run.id, me.token, run.config, recorded)).toBe(true);
    const record = {
      asked: true as const,
      added: [{ sampleId: "s3", epoch: 2, after: 1 }],
      outcomes: { failed: true, limited: false },
    };
    expect(await h.store.runs.updateConfig(run.id, "not-the-owner", run.config, record)).toBe(
      false,
    );
    expect(await read({})).toEqual(recorded);
    expect(await h.store.runs.updateConfig(run.id, me.token, run.config, record)).toBe(true);
    expect(await read({}, 1_000)).toEqual([
      { sampleId: "s1", epoch: 1, after: 2 },
      { sampleId: "s2", epoch: 1, after: 1 },
      { sampleId: "s3", epoch: 1, after: 0 },
      { sampleId: "s3", epoch: 2, after: 1 },
    ]);
    await expect(
      h.store.runs.updateConfig(run.id, me.token, run.config, {
        ...record,
        added: [{ sampleId: "s3", epoch: 0, after: 1 }],
      }),
    ).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
  });
}
