import { describe, expect, it } from "vitest";
import type { RerunRequest, SampleRecord } from "../../core/types.js";
import type { RunFilter } from "../types.js";
import {
  draft,
  errorDraft,
  type HarnessRef,
  newRun,
  owner,
  runConfig,
  sampleRecords,
  sleep,
} from "./fixtures.js";

export function describeRunContract(h: HarnessRef): void {
  describe("runs", () => {
    runCreationCases(h);
    snapshotAndConfigCases(h);
    rerunRequestCases(h);
    askedRerunCases(h);
    listingCases(h);
  });
}

/** Creating a run: its first state, and the ids and snapshots it refuses. */
function runCreationCases(h: HarnessRef): void {
  it("creates a running run owned by its creator, with a fresh heartbeat", async () => {
    const me = owner("creator");
    const config = runConfig({ model: "gpt-4o-mini", limit: 3, reducer: "pass@2" });
    const created = await h.store.runs.create({
      id: "run-1",
      config,
      samples: sampleRecords(["a", "b"]),
      owner: me,
    });
    expect(created).toMatchObject({
      id: "run-1",
      evalName: "arithmetic",
      status: "running",
      config,
      sampleCount: 2,
      note: null,
      owner: { host: me.host, pid: me.pid, token: me.token },
    });
    expect(created.owner?.heartbeatAgeMs).toBeLessThan(5_000);
    expect(Date.parse(created.createdAt)).not.toBeNaN();
    expect(await h.store.runs.get("run-1")).toMatchObject({
      ...created,
      owner: { token: me.token },
    });
  });

  it("returns undefined for an unknown run and E_RUN_NOT_FOUND where a run is required", async () => {
    expect(await h.store.runs.get("nope")).toBeUndefined();
    await expect(h.store.reads.countKeys("nope")).rejects.toMatchObject({
      code: "E_RUN_NOT_FOUND",
    });
    await expect(h.store.reads.getSamples("nope")).rejects.toMatchObject({
      code: "E_RUN_NOT_FOUND",
    });
  });

  it("refuses a second run with the same id and leaves the first as it was", async () => {
    const { run } = await newRun(h.store, { id: "dup" });
    await expect(newRun(h.store, { id: "dup", ids: ["x"] })).rejects.toMatchObject({
      code: "E_INVALID_INPUT",
    });
    expect(await h.store.runs.get("dup")).toMatchObject({ sampleCount: run.sampleCount });
    expect(await h.store.reads.getSamples("dup")).toHaveLength(3);
  });

  it("refuses a snapshot with duplicate sample ids and creates nothing", async () => {
    await expect(newRun(h.store, { id: "twice", ids: ["a", "b", "a"] })).rejects.toMatchObject({
      code: "E_DUPLICATE_ID",
      message: 'two samples have the id "a"',
    });
    expect(await h.store.runs.get("twice")).toBeUndefined();
    // The repeat in another statement (SQLite: 16 rows a statement; PostgreSQL: 5,000).
    const ids = Array.from({ length: 5_001 }, (_, i) => `s${i}`);
    await expect(newRun(h.store, { id: "far", ids: [...ids, "s2"] })).rejects.toMatchObject({
      code: "E_DUPLICATE_ID",
      message: 'two samples have the id "s2"',
    });
    expect(await h.store.runs.get("far")).toBeUndefined();
    expect(await h.store.reads.getSamples("far").catch((e: { code: string }) => e.code)).toBe(
      "E_RUN_NOT_FOUND",
    );
  });
}

/** A run's snapshot and config: read back whole, replaced by the owner only. */
function snapshotAndConfigCases(h: HarnessRef): void {
  it("round-trips the whole snapshot, ordered by sample id", async () => {
    const samples: SampleRecord[] = [
      { sample: { id: "b", input: "plain" }, fingerprint: "fp-b" },
      {
        sample: {
          id: "a",
          input: [{ role: "user", content: "hi" }],
          target: { answer: 42, alternatives: [41, 43] },
          metadata: { tags: ["x"], difficulty: 0.5, nested: { ok: true, none: null } },
        },
        fingerprint: "fp-a",
      },
    ];
    await h.store.runs.create({ id: "snap", config: runConfig(), samples, owner: owner() });
    expect(await h.store.reads.getSamples("snap")).toEqual([samples[1], samples[0]]);
    expect(await h.store.reads.listSampleFingerprints("snap")).toEqual([
      { sampleId: "a", fingerprint: "fp-a" },
      { sampleId: "b", fingerprint: "fp-b" },
    ]);
    await expect(h.store.reads.listSampleFingerprints("nope")).rejects.toMatchObject({
      code: "E_RUN_NOT_FOUND",
    });
  });

  it("replaces snapshot entries for the owner, all or nothing", async () => {
    const { owner: me } = await newRun(h.store, { id: "upd" });
    const [s1v2] = sampleRecords(["s1"], 2);
    await h.store.runs.updateSamples("upd", me.token, s1v2 ? [s1v2] : []);
    const snapshot = await h.store.reads.getSamples("upd");
    expect(snapshot.find((r) => r.sample.id === "s1")).toEqual(s1v2);
    expect(snapshot.find((r) => r.sample.id === "s2")?.fingerprint).toBe("fp:s2:v1");

    const [s2v3, ghost] = sampleRecords(["s2", "ghost"], 3);
    await expect(
      h.store.runs.updateSamples(
        "upd",
        me.token,
        [s2v3, ghost].flatMap((r) => (r ? [r] : [])),
      ),
    ).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
    expect(await h.store.reads.getSamples("upd")).toEqual(snapshot);
    await expect(
      h.store.runs.updateSamples("upd", me.token, [
        ...sampleRecords(["s3"], 4),
        ...sampleRecords(["s3"], 5),
      ]),
    ).rejects.toMatchObject({ code: "E_DUPLICATE_ID" });
    expect(await h.store.reads.getSamples("upd")).toEqual(snapshot);
  });

  it("replaces the recorded config for the owner only, and refuses one it could not read", async () => {
    const { owner: me } = await newRun(h.store, { id: "cfg" });
    const before = await h.store.runs.get("cfg");
    const next = runConfig({ scorers: ["exact", "judge"] });
    expect(await h.store.runs.updateConfig("cfg", me.token, next)).toBe(true);
    expect((await h.store.runs.get("cfg"))?.config).toEqual(next);

    expect(await h.store.runs.updateConfig("cfg", "not-the-owner", runConfig())).toBe(false);
    expect(await h.store.runs.updateConfig("ghost", me.token, runConfig())).toBe(false);
    const broken = { ...runConfig(), epochs: -1 };
    await expect(h.store.runs.updateConfig("cfg", me.token, broken)).rejects.toMatchObject({
      code: "E_INVALID_INPUT",
    });
    const after = await h.store.runs.get("cfg");
    expect(after?.config).toEqual(next);
    expect(after?.status).toBe(before?.status);
  });

  it("keeps a config's identity and history as written", async () => {
    const { owner: me } = await newRun(h.store, { id: "ident" });
    const next = runConfig({
      identity: {
        evalName: "e",
        solver: { kind: "chat", model: "m", params: { seed: 1 } },
        scorers: [{ name: "exact", config: { kind: "exact", trim: true } }],
        epochs: 2,
        evalFileSha256: "ab".repeat(32),
      },
      history: [
        {
          at: "2026-01-01T00:00:00.000Z",
          change: "eval-changed",
          differences: [{ field: "solver.model", recorded: "a", current: null }],
        },
      ],
    });
    expect(await h.store.runs.updateConfig("ident", me.token, next)).toBe(true);
    expect((await h.store.runs.get("ident"))?.config).toEqual(next);
  });
}

/** A run's re-run requests, kept beside it (`updateConfig`'s `reruns`, `reads.rerunPages`). */
function rerunRequestCases(h: HarnessRef): void {
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
function askedRerunCases(h: HarnessRef): void {
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

/** Listing runs, and a snapshot of 100,000 samples. */
function listingCases(h: HarnessRef): void {
  describe("listing", () => {
    async function threeRuns() {
      const alpha = { evalName: "alpha" };
      const main = { branch: "main", "ci.os": "linux" };
      const first = await newRun(h.store, { id: "r-first", config: alpha, labels: main });
      await sleep(5);
      const second = await newRun(h.store, { id: "r-second", config: { evalName: "beta" } });
      await sleep(5);
      const third = await newRun(h.store, {
        id: "r-third",
        config: alpha,
        labels: { branch: "fix/it", "ci.os": "linux" },
      });
      await h.store.runs.release("r-second", second.owner.token, "completed");
      return { first, second, third };
    }

    it.each<[string, RunFilter, string[]]>([
      ["everything, newest first", {}, ["r-third", "r-second", "r-first"]],
      ["by status", { status: "running" }, ["r-third", "r-first"]],
      ["by eval name", { evalName: "alpha" }, ["r-third", "r-first"]],
      ["by status and eval name", { status: "completed", evalName: "alpha" }, []],
      ["a first page", { limit: 2 }, ["r-third", "r-second"]],
      ["a second page", { limit: 2, offset: 2 }, ["r-first"]],
      ["an offset without limit", { offset: 1 }, ["r-second", "r-first"]],
      ["by a label", { labels: { branch: "main" } }, ["r-first"]],
      ["by two labels", { labels: { "ci.os": "linux", branch: "fix/it" } }, ["r-third"]],
      ["by a label's other value", { labels: { branch: "mai" } }, []],
      [
        "by a label and eval",
        { labels: { "ci.os": "linux" }, evalName: "alpha", limit: 1 },
        ["r-third"],
      ],
      ["by no label at all", { labels: {} }, ["r-third", "r-second", "r-first"]],
    ])("lists %s", async (_label, filter, ids) => {
      await threeRuns();
      const listed = await h.store.reads.listRuns(filter);
      expect(listed.map((l) => l.run.id)).toEqual(ids);
    });

    it("reads each run's labels back with sorted keys, and none as {}", async () => {
      await threeRuns();
      const listed = await h.store.reads.listRuns();
      expect(listed.map((l) => l.run.labels)).toEqual([
        { branch: "fix/it", "ci.os": "linux" },
        {},
        { branch: "main", "ci.os": "linux" },
      ]);
      expect(Object.keys((await h.store.runs.get("r-third"))!.labels)).toEqual(["branch", "ci.os"]);
    });

    it("refuses a label key it could not filter by, recording nothing", async () => {
      const bad = newRun(h.store, { id: "r-bad", labels: { "no spaces": "x" } });
      await expect(bad).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
      expect(await h.store.runs.get("r-bad")).toBeUndefined();
    });

    it("lists each run with its counts", async () => {
      await threeRuns();
      const listed = await h.store.reads.listRuns({ evalName: "beta" });
      expect(listed).toMatchObject([
        {
          run: { id: "r-second", status: "completed", owner: null },
          counts: { total: 6, scored: 0, errored: 0, remaining: 6 },
        },
      ]);
    });
  });

  it("stores a 100,000-sample snapshot", async () => {
    // 100,003: the SQLite adapter writes a snapshot 16 samples to a statement, the rest one by one.
    const ids = Array.from({ length: 100_003 }, (_, i) => `sample-${i}`);
    const { owner: me, samples } = await newRun(h.store, {
      id: "big",
      ids,
      config: { epochs: 3 },
    });
    expect(await h.store.runs.get("big")).toMatchObject({
      sampleCount: 100_003,
      owner: { token: me.token },
    });
    expect(await h.store.reads.countKeys("big")).toEqual({
      total: 300_009,
      scored: 0,
      errored: 0,
      remaining: 300_009,
    });
    // Every sample as given (getSamples reads them by sample id; the ids are ASCII).
    const byId = (a: SampleRecord, b: SampleRecord) => (a.sample.id < b.sample.id ? -1 : 1);
    expect(await h.store.reads.getSamples("big")).toEqual([...samples].sort(byId));
  });
}
