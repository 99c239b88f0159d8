import { describe, expect, it } from "vitest";
import type { SampleRecord } from "../../core/types.js";
import type { RunFilter } from "../types.js";
import { askedRerunCases, rerunRequestCases } from "./rerun-requests.js";
import { type HarnessRef, newRun, owner, runConfig, sampleRecords, sleep } from "./fixtures.js";

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
