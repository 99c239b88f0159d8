import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Json } from "../src/core/json.js";
import type { DatasetRow } from "../src/dataset/types.js";
import type { Score } from "../src/core/types.js";
import { defineEval } from "../src/eval/define-eval.js";
import { resolveEval } from "../src/eval/resolve-eval.js";
import { runEval } from "../src/runs/start-run.js";
import type { SandboxConfig } from "../src/sandbox/index.js";
import { code } from "../src/scorers/code.js";
import { SKIP_SANDBOX } from "./helpers/sandbox.js";
import { tempStore } from "./helpers/temp-store.js";

// Hostile programs, each run as a one-sample eval through the real lifecycle (a SQLite store,
// runEval) with scorers.code in the bubblewrap sandbox. A program exits 0 only when its attack
// worked, so containment shows as a 0; every process it starts carries a marker in its argv,
// and /proc is scanned afterwards for survivors.

const REPO = fileURLToPath(new URL("..", import.meta.url));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * "Returns in time", for programs that would otherwise run for ever or for the 300 s their
 * daemons sleep: far from both, so a loaded machine cannot break it.
 */
const LONG_BEFORE_MS = 30_000;

let counter = 0;
function marker(): string {
  return `stet-hostile-${process.pid}-${Date.now()}-${counter++}`;
}

/** Pids of live processes whose argv holds `mark`. */
function survivors(mark: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function hostile(
  program: string,
  options: { sandbox?: SandboxConfig; timeoutMs?: number } = {},
): Promise<{ score: Score; mark: string; status: string; store: string; ms: number }> {
  const t = tempStore();
  cleanups.push(t.cleanup);
  const mark = marker();
  const ev = defineEval({
    name: "hostile",
    dataset: [
      { id: "attack", input: program.replaceAll("MARK", mark).replaceAll("STORE", t.path) },
    ] as DatasetRow[],
    solver: (sample) => sample.input as Json,
    scorers: [
      code({
        command: ["python3", "-", mark],
        program: ({ output }) => String(output),
        timeoutMs: options.timeoutMs ?? 5000,
      }),
    ],
    sandbox: options.sandbox ?? { kind: "bubblewrap" },
  });
  const started = performance.now();
  const report = await runEval({ store: t.store, eval: await resolveEval(ev, { baseDir: REPO }) });
  const ms = performance.now() - started;
  const [attempt] = await t.store.listAttempts(report.runId);
  expect(attempt?.status, JSON.stringify(attempt?.error)).toBe("scored");
  return { score: attempt!.scores[0]!, mark, status: report.status, store: t.path, ms };
}

function expectContained(result: { score: Score; mark: string; status: string }): void {
  expect(result.status).toBe("completed");
  expect(result.score.value, JSON.stringify(result.score.metadata)).toBe(0);
  expect(survivors(result.mark)).toEqual([]);
}

describe.skipIf(SKIP_SANDBOX)("hostile programs in the bubblewrap sandbox", () => {
  it("cannot connect to a port on the host", async () => {
    let connections = 0;
    const server: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const { networkInterfaces } = await import("node:os");
    const hosts = [
      "127.0.0.1",
      ...Object.values(networkInterfaces())
        .flat()
        .filter((i) => i?.family === "IPv4" && !i.internal)
        .map((i) => i!.address),
    ];
    const result = await hostile(`
import socket, sys
for host in ${JSON.stringify(hosts)}:
    try:
        socket.create_connection((host, ${port}), timeout=1).close()
        sys.exit(0)
    except OSError as e:
        print(host, e, file=sys.stderr)
sys.exit(1)
`);
    expectContained(result);
    expect(connections).toBe(0);
    // The port was open all along: the host reaches it.
    const { connect } = await import("node:net");
    await new Promise<void>((resolve, reject) =>
      connect(port, "127.0.0.1").on("connect", resolve).on("error", reject),
    );
  });

  it("cannot write a file outside its temporary directory", async () => {
    const dir = mkdtempSync(join(REPO, ".sandbox-test-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const targets = [join(dir, "pwned"), join(REPO, "pwned"), "/usr/pwned", "/etc/pwned", "/pwned"];
    const result = await hostile(`
import sys
wrote = False
for path in ${JSON.stringify(targets)}:
    try:
        open(path, "w").write("pwned")
        wrote = True
    except OSError as e:
        print(path, e, file=sys.stderr)
open("/tmp/fine", "w").write("the private /tmp is writable")
sys.exit(0 if wrote else 1)
`);
    expectContained(result);
    for (const target of targets) expect(existsSync(target)).toBe(false);
    expect(result.score.metadata?.exitCode).toBe(1);
  });

  it("cannot read the store file", async () => {
    const result = await hostile(`
import sys
try:
    data = open("STORE", "rb").read()
    sys.exit(0 if data.startswith(b"SQLite") else 1)
except OSError as e:
    print(e, file=sys.stderr)
    sys.exit(1)
`);
    expectContained(result);
    expect(String(result.score.metadata?.stderr)).toMatch(/No such file or directory/);
    // The store is there on the host.
    expect(readFileSync(result.store).subarray(0, 6).toString()).toBe("SQLite");
  });

  it("cannot read an environment secret", async () => {
    const saved = { ...process.env };
    process.env.OPENAI_API_KEY = "sk-hostile-secret";
    process.env.STET_TOKEN = "stet-hostile-secret";
    cleanups.push(() => {
      for (const key of ["OPENAI_API_KEY", "STET_TOKEN"]) {
        if (saved[key] === undefined) delete process.env[key];
        else process.env[key] = saved[key];
      }
    });
    const result = await hostile(`
import os, sys, glob
found = any("hostile-secret" in v for v in os.environ.values())
for path in glob.glob("/proc/*/environ"):
    try:
        found = found or b"hostile-secret" in open(path, "rb").read()
    except OSError:
        pass
print(sorted(os.environ))
sys.exit(0 if found else 1)
`);
    expectContained(result);
    expect(String(result.score.metadata?.stdout)).not.toMatch(/OPENAI|STET_/);
  });

  it("spinning forever is killed at the wall-time limit", async () => {
    const result = await hostile("while True:\n    pass\n", { timeoutMs: 1500 });
    expectContained(result);
    expect(result.score.metadata).toMatchObject({ timedOut: true, signal: "SIGKILL" });
    expect(result.ms).toBeLessThan(LONG_BEFORE_MS);
  });

  it("a fork bomb hits the process limit and dies with the sandbox", async () => {
    const result = await hostile(
      `
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
`,
      { timeoutMs: 2000, sandbox: { kind: "bubblewrap", maxProcesses: 16 } },
    );
    expectContained(result);
    expect(result.score.metadata?.timedOut).toBe(true);
  });

  it("allocating far more memory than the limit fails", async () => {
    const result = await hostile(
      `
chunks = []
while True:
    chunks.append(bytearray(16 * 1024 * 1024))
`,
      { sandbox: { kind: "bubblewrap", memoryMb: 256 } },
    );
    expectContained(result);
    expect(String(result.score.metadata?.stderr)).toMatch(/MemoryError/);
  });

  it("flooding stdout keeps the first bytes, counts the rest and is stopped", async () => {
    const result = await hostile(
      `
import sys
while True:
    sys.stdout.write("x" * 65536)
`,
      { timeoutMs: 2000 },
    );
    expectContained(result);
    const metadata = result.score.metadata!;
    expect(metadata.timedOut).toBe(true);
    expect(metadata.stdoutBytes as number).toBeGreaterThan(10 * 65_536);
    expect(String(metadata.stdout)).toMatch(/^x{2000}$/);
  });

  it("killing its parent and everything it can see leaves the run standing", async () => {
    const result = await hostile(`
import os, signal, sys
for pid in [os.getppid(), 1, ${process.pid}, ${process.ppid}]:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as e:
        print(pid, e, file=sys.stderr)
try:
    os.kill(-1, signal.SIGKILL)
except OSError as e:
    print(-1, e, file=sys.stderr)
sys.exit(3)
`);
    expectContained(result);
    // It lived to its own exit, and its result came back to the run.
    expect(result.score.metadata?.exitCode).toBe(3);
  });

  it("a daemon it leaves behind is gone when the scorer returns", async () => {
    const result = await hostile(`
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "MARK"], start_new_session=True)
subprocess.Popen([sys.executable, "-c", "import os, time; os.fork(); time.sleep(300)", "MARK"], start_new_session=True, stdout=subprocess.DEVNULL)
sys.exit(1)
`);
    expectContained(result);
    expect(result.ms).toBeLessThan(LONG_BEFORE_MS);
  });
  it("the same reads and writes succeed unsandboxed, so these tests can fail", async () => {
    const dir = mkdtempSync(join(REPO, ".sandbox-test-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const result = await hostile(
      `
import sys
open("STORE", "rb").read(16)
open(${JSON.stringify(join(dir, "pwned"))}, "w").write("pwned")
sys.exit(0)
`,
      { sandbox: { kind: "none" } },
    );
    expect(result.score.value, JSON.stringify(result.score.metadata)).toBe(1);
    expect(existsSync(join(dir, "pwned"))).toBe(true);
  });
});
