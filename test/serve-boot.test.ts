import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hostId } from "../src/engine/owner.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli } from "./helpers/cli.js";
import { startServe } from "./helpers/serve.js";
import { tempDir } from "./helpers/temp-store.js";
import { runConfig } from "../src/store/contract/fixtures.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const config = runConfig({ evalName: "e", epochs: 1, concurrency: 1 });

function tmpDb() {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  return join(tmp.dir, "stet.db");
}

describe("stet serve boot", () => {
  it("recovers a dead owner's run and leaves a live owner's run untouched", async () => {
    const db = tmpDb();
    const sleeper = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60_000)"]);
    cleanups.push(() => void sleeper.kill("SIGKILL"));
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    const store = openSqliteStore(db);
    for (const [id, pid] of [
      ["r_dead", dead],
      ["r_live", sleeper.pid!],
    ] as const) {
      await store.runs.create({
        id,
        config,
        samples: [],
        owner: { host: hostId(), pid, token: `t-${id}` },
      });
    }
    const liveBefore = await store.runs.get("r_live");
    await store.close();

    const server = await startServe(["--store", db]);
    cleanups.push(() => void server.proc.child.kill("SIGKILL"));
    const read = async (id: string) =>
      (await (await server.fetch(`/api/runs/${id}`)).json()) as object;

    expect(await read("r_dead")).toMatchObject({
      status: "interrupted",
      owner: null,
      note: expect.stringMatching(new RegExp(`owner pid ${dead} .*died \\(pid ${dead} is gone\\)`)),
    });
    expect(server.proc.stderr()).toMatch(/recovered run r_dead/);
    expect(await read("r_live")).toMatchObject({
      status: "running",
      note: null,
      owner: { pid: sleeper.pid, alive: true },
    });
    const check = openSqliteStore(db);
    expect(await check.runs.get("r_live")).toMatchObject({
      status: "running",
      updatedAt: liveBefore?.updatedAt,
      owner: { token: "t-r_live", heartbeatAt: liveBefore?.owner?.heartbeatAt },
    });
    await check.close();

    const resume = await server.post("/api/runs/r_live/resume");
    expect(resume.status).toBe(409);
    expect(await resume.json()).toMatchObject({
      error: { code: "run_active", message: expect.stringContaining(`pid ${sleeper.pid}`) },
    });
  });

  it("refuses to bind beyond loopback without STET_TOKEN", async () => {
    const result = await runCli(["serve", "--host", "0.0.0.0", "--port", "0", "--store", tmpDb()], {
      env: { STET_TOKEN: "" },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/STET_TOKEN/);
  });

  it("then requires the bearer token on every /api request", async () => {
    const token = "tok-0123456789-boot-0123456789-boot";
    const server = await startServe(["--host", "0.0.0.0", "--store", tmpDb()], {
      STET_TOKEN: token,
    });
    cleanups.push(() => void server.proc.child.kill("SIGKILL"));
    const bare = await server.fetch("/api/runs");
    expect(bare.status).toBe(401);
    expect(await bare.json()).toMatchObject({ error: { code: "unauthorized" } });
    const ok = await server.fetch("/api/runs", { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
  });
});
