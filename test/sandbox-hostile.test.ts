import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Json } from "../src/core/json.js";
import type { DatasetRow } from "../src/dataset/types.js";
import type { Score } from "../src/core/types.js";
import { defineEval } from "../src/eval/define-eval.js";
import { resolveEval } from "../src/eval/resolve-eval.js";
import { runEval } from "../src/runs/start-run.js";
import { SANDBOX_PATH } from "../src/sandbox/bubblewrap.js";
import { createSandbox, type SandboxConfig } from "../src/sandbox/index.js";
import { code } from "../src/scorers/code.js";
import { SKIP_SANDBOX } from "./helpers/sandbox.js";
import { tempStore } from "./helpers/temp-store.js";

// Hostile programs, each run as a one-sample eval through the real lifecycle (a SQLite store,
// runEval) with scorers.code in the bubblewrap sandbox. A program exits 0 only when its attack
// worked, so containment shows as a 0; every process it starts carries a marker in its argv,
// and /proc is scanned afterwards for survivors.

const REPO = fileURLToPath(new URL("..", import.meta.url));
/** Tries to keep 1.9 GB alive one way or another (its argv names the way); see the file. */
const HOARD = readFileSync(join(REPO, "test/fixtures/hostile/hoard.py"), "utf8");
const MiB = 2 ** 20;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

let counter = 0;
function marker(): string {
  return `stet-hostile-${process.pid}-${Date.now()}-${counter++}`;
}

/** Pids of live processes whose argv holds `mark` (and whose name is `comm`, when given). */
function survivors(mark: string, comm?: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark)) return false;
        return comm === undefined || readFileSync(`/proc/${pid}/comm`, "utf8").trim() === comm;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function until<T>(find: () => T | undefined, ms: number): Promise<T | undefined> {
  const end = Date.now() + ms;
  for (let found = find(); Date.now() < end; found = find()) {
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return find();
}

/** What hoard.py printed: the bytes it kept alive and the errno that stopped it. */
function hoarded(score: Score): { stored: number; errno: string | null } {
  return JSON.parse(String(score.metadata?.stdout)) as { stored: number; errno: string | null };
}

async function hostile(
  program: string,
  options: { sandbox?: SandboxConfig; timeoutMs?: number; args?: string[] } = {},
): Promise<{ score: Score; mark: string; status: string; store: string }> {
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
        command: ["python3", "-", mark, ...(options.args ?? [])],
        program: ({ output }) => String(output),
        timeoutMs: options.timeoutMs ?? 5000,
      }),
    ],
    sandbox: options.sandbox ?? { kind: "bubblewrap" },
  });
  const report = await runEval({ store: t.store, eval: await resolveEval(ev, { baseDir: REPO }) });
  const [attempt] = await t.store.reads.listAttempts(report.runId);
  expect(attempt?.status, JSON.stringify(attempt?.error)).toBe("scored");
  return { score: attempt!.scores[0]!, mark, status: report.status, store: t.path };
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
  });

  it("sleeping past the wall-time limit is killed there", async () => {
    const result = await hostile("import time\ntime.sleep(300)\n", { timeoutMs: 1500 });
    expectContained(result);
    expect(result.score.metadata).toMatchObject({ timedOut: true, signal: "SIGKILL" });
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

  // At the default memoryMb (1024), /tmp holds 128 MiB, /dev/shm 32 MiB, and the address space
  // of each process is the rest, 864 MiB.
  it.each([
    { way: "tmp", what: "/tmp", errno: "ENOSPC", least: 100 * MiB, most: 128 * MiB },
    { way: "dev-shm", what: "/dev/shm", errno: "ENOSPC", least: 20 * MiB, most: 32 * MiB },
    { way: "dev", what: "/dev", errno: "EROFS", least: 0, most: 0 },
    {
      way: "nested-tmpfs",
      what: "a tmpfs in a user namespace of its own",
      errno: "EPERM",
      least: 0,
      most: 0,
    },
    { way: "memfd", what: "memfd_create", errno: "ENOSYS", least: 0, most: 0 },
    { way: "sysv-shm", what: "System V shared memory", errno: "ENOSYS", least: 0, most: 0 },
  ])("cannot keep 1.9 GB of host memory through $what", async ({ way, errno, least, most }) => {
    const result = await hostile(HOARD, { args: [way], timeoutMs: 30_000 });
    expectContained(result);
    const hoard = hoarded(result.score);
    expect(hoard.errno, String(result.score.metadata?.stderr)).toBe(errno);
    expect(hoard.stored).toBeGreaterThanOrEqual(least);
    expect(hoard.stored).toBeLessThanOrEqual(most);
  });

  it("its files and its heap together stay within memoryMb", async () => {
    const result = await hostile(HOARD, { args: ["tmp-then-heap", "1025"], timeoutMs: 30_000 });
    expectContained(result);
    const hoard = hoarded(result.score);
    expect(hoard.errno, String(result.score.metadata?.stderr)).toBe("ENOMEM");
    // It filled /tmp and /dev/shm before the heap.
    expect(hoard.stored).toBeGreaterThan(150 * MiB);
    expect(hoard.stored).toBeLessThanOrEqual(1024 * MiB);
  });

  it("the host sees its /tmp and /dev/shm capped within memoryMb, and full", async () => {
    const sandbox = createSandbox({ kind: "bubblewrap", memoryMb: 512 });
    await sandbox.check();
    const mark = marker();
    const controller = new AbortController();
    cleanups.push(() => controller.abort());
    const running = sandbox.exec({
      command: ["python3", "-", mark],
      stdin: `
import time
for directory in ["/tmp", "/dev/shm"]:
    try:
        for i in range(60):
            with open(f"{directory}/f{i}", "wb", buffering=0) as f:
                for _ in range(32):
                    f.write(b"x" * 2**20)
    except OSError:
        pass
open("/tmp/full", "w").close()
time.sleep(300)
`,
      signal: controller.signal,
      limits: { timeoutMs: 120_000 },
    });
    // Its filesystems as the host sees them: through /proc/PID/root of the program, once full.
    const seen = await until(() => {
      const [pid] = survivors(mark, "python3");
      const root = `/proc/${pid}/root`;
      if (pid === undefined || !existsSync(`${root}/tmp/full`)) return undefined;
      return { tmp: statfsSync(`${root}/tmp`), shm: statfsSync(`${root}/dev/shm`) };
    }, 60_000);
    controller.abort();
    expect((await running).aborted).toBe(true);
    expect(seen).toBeDefined();
    for (const [fs, size] of [
      [seen!.tmp, 64 * MiB],
      [seen!.shm, 16 * MiB],
    ] as const) {
      const used = (fs.blocks - fs.bfree) * fs.bsize;
      expect(fs.blocks * fs.bsize).toBe(size);
      expect(used).toBeGreaterThan(size / 2);
      expect(used).toBeLessThanOrEqual(size);
    }
    expect(survivors(mark)).toEqual([]);
  });

  it("sees no variable of the host's environment, not even in bwrap's own (/proc/1/environ)", async () => {
    const allowed = [
      `PATH=${SANDBOX_PATH}`,
      "HOME=/tmp",
      "TMPDIR=/tmp",
      "LANG=C.UTF-8",
      "PYTHONDONTWRITEBYTECODE=1",
      "PWD=/tmp",
    ];
    const result = await hostile(`
import glob, json, sys
allowed = set(${JSON.stringify(allowed)})
seen = {}
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        seen[path] = [v for v in open(path, "rb").read().decode("utf8", "replace").split("\\0") if v]
    except OSError as e:
        print(path, e, file=sys.stderr)
print(json.dumps(seen))
sys.exit(0 if any(v not in allowed for vs in seen.values() for v in vs) else 1)
`);
    expectContained(result);
    const seen = JSON.parse(String(result.score.metadata?.stdout)) as Record<string, string[]>;
    // bwrap's own environment (pid 1, the sandbox's init) was read, and its own.
    expect(seen["/proc/1/environ"]).toBeDefined();
    expect(Object.keys(seen).length).toBeGreaterThanOrEqual(2);
  });

  it("cannot reach host files through the home directory, the eval's folder, symlinks or /proc", async () => {
    const result = await hostile(`
import os, sys
reached = []
def attempt(what, action):
    try:
        action()
        reached.append(what)
    except OSError as e:
        print(what, e, file=sys.stderr)
attempt("home", lambda: os.listdir(${JSON.stringify(homedir())}))
attempt("eval folder", lambda: os.listdir(${JSON.stringify(REPO)}))
os.symlink("STORE", "/tmp/store-link")
attempt("symlink", lambda: open("/tmp/store-link", "rb").read(16))
attempt("hard link", lambda: os.link("STORE", "/tmp/store-hard-link"))
attempt("/proc/1/root", lambda: open("/proc/1/root" + "STORE", "rb").read(16))
attempt("/proc/self/cwd", lambda: open("/proc/self/cwd/.." + "STORE", "rb").read(16))
print(reached)
sys.exit(0 if reached else 1)
`);
    expectContained(result);
    expect(String(result.score.metadata?.stdout).trim()).toBe("[]");
  });

  it("cannot connect to an abstract unix socket on the host", async () => {
    let connections = 0;
    const name = `\0${marker()}`;
    const server: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(name, resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const result = await hostile(`
import socket, sys
try:
    socket.socket(socket.AF_UNIX).connect(${JSON.stringify(name)})
    sys.exit(0)
except OSError as e:
    print(e, file=sys.stderr)
    sys.exit(1)
`);
    expectContained(result);
    expect(connections).toBe(0);
    // The socket was there all along: the host reaches it.
    await new Promise<void>((resolve, reject) =>
      connect(name).on("connect", resolve).on("error", reject),
    );
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
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "MARK"], start_new_session=True)
subprocess.Popen([sys.executable, "-c", "import os, time; os.fork(); time.sleep(300)", "MARK"], start_new_session=True, stdout=subprocess.DEVNULL)
# The classic double fork: the grandchild, in a session of its own, is orphaned to pid 1.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 3)
        time.sleep(300)
    os._exit(0)
sys.exit(1)
`);
    expectContained(result);
    // It exited at once: the scorer did not wait for what it left behind (5 s would time out).
    expect(result.score.metadata).toMatchObject({ exitCode: 1, timedOut: false });
  });
  it("a well-behaved program keeps its threads, processes, multiprocessing and files", async () => {
    const result = await hostile(`
import multiprocessing, os, sys, threading
threads = [threading.Thread(target=lambda: None) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with multiprocessing.Pool(2) as pool:
    assert pool.map(abs, [-1, -2, -3]) == [1, 2, 3]
pid = os.fork()
if pid == 0:
    os._exit(7)
assert os.waitpid(pid, 0)[1] >> 8 == 7
with open("/tmp/data", "wb") as f:
    f.write(b"x" * 60 * 2**20)
with open("/dev/shm/data", "wb") as f:
    f.write(b"x" * 2**20)
sys.exit(3)
`);
    expect(result.score.metadata).toMatchObject({ exitCode: 3, stderr: "" });
    expect(survivors(result.mark)).toEqual([]);
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
