import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { OwnerIdentity } from "../core/types.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/types.js";
import { hostId } from "../engine/owner.js";
import { recoverOrphans } from "./recover-orphans.js";
import { runConfig } from "../store/contract/fixtures.js";
import { seedDistributedRun } from "../../test/helpers/distributed-run.js";

const config = runConfig({ evalName: "e", epochs: 1, concurrency: 1 });

const opened: { store: Store; dir: string }[] = [];
afterEach(async () => {
  for (const { store, dir } of opened.splice(0)) {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A store whose clock the test moves, so heartbeats can age without waiting. */
function clockedStore() {
  const dir = mkdtempSync(join(tmpdir(), "stet-recover-"));
  const clock = { now: Date.now() };
  const store = openSqliteStore(join(dir, "stet.db"), { now: () => clock.now });
  opened.push({ store, dir });
  return { store, clock };
}

const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid!;
const create = (store: Store, id: string, owner: OwnerIdentity) =>
  store.runs.create({ id, config, samples: [], owner });

describe("recoverOrphans", () => {
  it("interrupts every dead owner's run and leaves live owners alone", async () => {
    const { store, clock } = clockedStore();
    const here = hostId();
    const dead = deadPid();
    await create(store, "stale-elsewhere", { host: "far#1", pid: 1, token: "t-stale" });
    clock.now += 60_000;
    // More dead runs than any page size, so a paging bug would leave some behind.
    for (let i = 0; i < 150; i++) {
      await create(store, `dead-${i}`, { host: here, pid: dead, token: `t-dead-${i}` });
    }
    await create(store, "live-here", { host: here, pid: process.pid, token: "t-live" });
    await create(store, "fresh-elsewhere", { host: "far#1", pid: 2, token: "t-fresh" });

    const result = await recoverOrphans(store, { staleMs: 30_000 });

    expect(result.recovered).toHaveLength(151);
    expect(result.recovered).toContainEqual({
      runId: "stale-elsewhere",
      reason: expect.stringMatching(/heartbeat is 60s old/),
    });
    expect(result.alive.sort()).toEqual(["fresh-elsewhere", "live-here"]);
    expect(await store.reads.listRuns({ status: "running" })).toHaveLength(2);
    expect(await store.runs.get("dead-7")).toMatchObject({
      status: "interrupted",
      owner: null,
      note: expect.stringMatching(
        new RegExp(`owner pid ${dead} on .* died \\(pid ${dead} is gone\\)`),
      ),
    });
    expect(await store.runs.get("live-here")).toMatchObject({
      status: "running",
      owner: { token: "t-live" },
    });
  });

  it("leaves a running distributed run alone: no owner is not a dead owner", async () => {
    const { store, clock } = clockedStore();
    const { runId } = await seedDistributedRun(store);
    // Its workers' heartbeats are long stale: their leases expire, the run is still theirs.
    clock.now += 10 * 60_000;
    const result = await recoverOrphans(store, { staleMs: 30_000 });
    expect(result).toEqual({ recovered: [], alive: [], skipped: [] });
    expect(await store.runs.get(runId)).toMatchObject({ status: "running", owner: null });
  });

  it("skips a run that a resumer claimed between the read and the write", async () => {
    const { store } = clockedStore();
    await create(store, "contested", { host: hostId(), pid: deadPid(), token: "t-old" });
    const racing: Store = { ...store, reads: { ...store.reads } };
    racing.reads.listRuns = async (filter) => {
      const listed = await store.reads.listRuns(filter);
      await store.runs.claim(
        "contested",
        { host: hostId(), pid: process.pid, token: "t-new" },
        "t-old",
      );
      return listed;
    };
    const result = await recoverOrphans(racing);
    expect(result).toEqual({ recovered: [], alive: [], skipped: ["contested"] });
    expect(await store.runs.get("contested")).toMatchObject({
      status: "running",
      owner: { token: "t-new" },
    });
  });
});
