import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { DatasetRow } from "../dataset/types.js";
import { defineEval } from "../eval/define-eval.js";
import { resolveEval } from "../eval/resolve-eval.js";
import { runEval } from "../runs/start-run.js";
import { createSandbox, sandboxed } from "../sandbox/index.js";
import { exact } from "./exact.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { code } from "./code.js";
import { SKIP_SANDBOX } from "../../test/helpers/sandbox.js";

const HUMANEVAL = fileURLToPath(
  new URL("../../examples/humaneval/humaneval.jsonl", import.meta.url),
);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Task {
  task_id: string;
  prompt: string;
  entry_point: string;
  canonical_solution: string;
  test: string;
}

/** HumanEval with a solver that answers `completion(task)`, scored by running the task's tests. */
function humaneval(completion: (task: Task) => string) {
  return defineEval({
    name: "humaneval",
    dataset: HUMANEVAL,
    sample: (row) => {
      const task = row as unknown as Task;
      return {
        id: task.task_id,
        input: task.prompt,
        metadata: { entry_point: task.entry_point, test: task.test, completion: completion(task) },
      };
    },
    solver: (sample) => String(sample.metadata?.completion),
    scorers: [
      code({
        command: ["python3", "-"],
        program: ({ sample, output }) =>
          `${sample.input}${String(output)}\n\n${sample.metadata?.test}\n\ncheck(${sample.metadata?.entry_point})\n`,
        timeoutMs: 20_000,
      }),
    ],
    concurrency: availableParallelism(),
  });
}

async function run(ev: ReturnType<typeof humaneval>, limit?: number) {
  const t = tempStore();
  cleanups.push(t.cleanup);
  const resolved = await resolveEval(ev, {
    baseDir: ".",
    ...(limit === undefined ? {} : { limit }),
  });
  const report = await runEval({ store: t.store, eval: resolved });
  return { report, attempts: await t.store.reads.listAttempts(report.runId) };
}

describe.skipIf(SKIP_SANDBOX)("scorers.code in the bubblewrap sandbox", () => {
  it("passes all 164 HumanEval canonical solutions", { timeout: 180_000 }, async () => {
    const { report, attempts } = await run(humaneval((task) => task.canonical_solution));
    expect(report.status).toBe("completed");
    expect(attempts).toHaveLength(164);
    const failed = attempts.filter((a) => a.scores[0]?.value !== 1);
    expect(failed.map((a) => [a.sampleId, a.scores[0]?.metadata?.stderr])).toEqual([]);
    expect(report.metrics).toEqual([expect.objectContaining({ scorer: "code", mean: 1 })]);
  });

  it("fails a wrong solution, with the assertion in the stderr tail", async () => {
    const { attempts } = await run(
      humaneval(() => "    return None\n"),
      3,
    );
    expect(attempts).toHaveLength(3);
    for (const attempt of attempts) {
      expect(attempt.status).toBe("scored");
      expect(attempt.scores[0]).toMatchObject({
        value: 0,
        explanation: "exited with code 1",
        metadata: { exitCode: 1, timedOut: false, stderr: expect.stringMatching(/AssertionError/) },
      });
    }
  });

  it("refuses the run before any solver call when the backend is missing", async () => {
    let calls = 0;
    const ev = defineEval({
      name: "missing",
      dataset: [{ id: "s", input: "print(1)" }] as DatasetRow[],
      solver: (sample) => {
        calls++;
        return String(sample.input);
      },
      scorers: [code({ command: ["python3", "-"], program: ({ output }) => String(output) })],
      sandbox: { kind: "bubblewrap", bwrap: "/nonexistent/bwrap" },
    });
    await expect(resolveEval(ev, { baseDir: "." })).rejects.toMatchObject({
      code: "E_CONFIG",
      message: expect.stringMatching(
        /"\/nonexistent\/bwrap" was not found.*apt-get install bubblewrap.*kind: "none"/,
      ),
    });
    expect(calls).toBe(0);
  });

  it("runs unsandboxed only when asked by name, and then it is not contained", async () => {
    const sandbox = createSandbox({ kind: "none" });
    const result = await sandbox.exec({
      command: [
        "python3",
        "-c",
        "import os; print(os.path.exists('/proc/1/cmdline'), os.environ.get('SECRET_X'))",
      ],
      env: { SECRET_X: "given" },
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: "True given\n" });
  });

  it("kills the execution when the attempt is aborted", async () => {
    const sandbox = createSandbox({ kind: "bubblewrap" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const result = await sandbox.exec({
      command: ["python3", "-c", "import time; time.sleep(60)"],
      signal: controller.signal,
    });
    expect(result).toMatchObject({ aborted: true, timedOut: false, exitCode: null });
    // Far from the minute the program sleeps: a loaded machine cannot break it.
    expect(result.durationMs).toBeLessThan(30_000);
  });

  it("refuses a bubblewrap too old to size the sandbox's /tmp, naming the version it needs", async () => {
    const { chmodSync, mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "stet-old-bwrap-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    // bubblewrap 0.6's answer to --size; run as root, stet starts it as nobody.
    const bwrap = join(dir, "bwrap");
    writeFileSync(bwrap, "#!/bin/sh\necho 'bwrap: Unknown option --size' >&2\nexit 1\n");
    chmodSync(bwrap, 0o755);
    chmodSync(dir, 0o755);
    await expect(createSandbox({ kind: "bubblewrap", bwrap }).check()).rejects.toThrow(
      /Unknown option --size.*bubblewrap 0\.7 or newer/,
    );
  });

  it("refuses a bad limit naming it", () => {
    expect(() => createSandbox({ kind: "bubblewrap", memoryMb: -1 })).toThrow(/memoryMb/);
    expect(() => code({ command: [], program: () => "" })).toThrow(/needs a command/);
  });
});

describe.skipIf(SKIP_SANDBOX)("a sandboxed solver", () => {
  it("gets the eval's sandbox, checked before the run, as its third argument", async () => {
    const ev = defineEval({
      name: "agent-tools",
      dataset: [{ id: "s", input: "print(6 * 7)", target: "42" }] as DatasetRow[],
      solver: sandboxed(async (sample, ctx, sandbox) => {
        const result = await sandbox.exec({
          command: ["python3", "-"],
          stdin: String(sample.input),
          signal: ctx.signal,
        });
        return result.stdout.trim();
      }),
      scorers: [exact()],
    });
    const t = tempStore();
    cleanups.push(t.cleanup);
    const report = await runEval({ store: t.store, eval: await resolveEval(ev, { baseDir: "." }) });
    expect(report.metrics).toEqual([expect.objectContaining({ scorer: "exact", mean: 1 })]);
  });

  it("refuses the run when the sandbox is missing, before the solver runs", async () => {
    let calls = 0;
    const ev = defineEval({
      name: "agent-tools",
      dataset: [{ id: "s", input: "x" }] as DatasetRow[],
      solver: sandboxed(() => String(++calls)),
      scorers: [exact()],
      sandbox: { kind: "bubblewrap", bwrap: "/nonexistent/bwrap" },
    });
    await expect(resolveEval(ev, { baseDir: "." })).rejects.toThrow(/apt-get install bubblewrap/);
    expect(calls).toBe(0);
  });
});

describe.skipIf(SKIP_SANDBOX)("kind none", () => {
  it("returns when the program exits although a daemon it left holds stdout", async () => {
    const mark = `stet-none-daemon-${process.pid}-${Date.now()}`;
    const result = await createSandbox({ kind: "none" }).exec({
      command: ["python3", "-", mark],
      stdin: `import subprocess, sys\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "${mark}"], start_new_session=True)\nprint("spawned")\n`,
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: "spawned\n" });
    // Far from the 300 s the daemon holds stdout: a loaded machine cannot break it.
    expect(result.durationMs).toBeLessThan(30_000);
    // Unsandboxed, the daemon survives (that is what kind "none" means): end it here, by pid.
    const { readdirSync, readFileSync } = await import("node:fs");
    const daemons = readdirSync("/proc")
      .filter((pid) => /^\d+$/.test(pid))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark);
        } catch {
          return false;
        }
      });
    expect(daemons).toHaveLength(1);
    for (const pid of daemons) process.kill(Number(pid), "SIGKILL");
  });

  it("a scorer with its own sandbox checks that one, not the eval's default", async () => {
    const ev = defineEval({
      name: "own-sandbox",
      dataset: [{ id: "s", input: "print(1)" }] as DatasetRow[],
      solver: (sample) => String(sample.input),
      scorers: [
        code({
          command: ["python3", "-"],
          program: ({ output }) => String(output),
          sandbox: { kind: "bubblewrap", bwrap: "/nonexistent/bwrap" },
        }),
      ],
    });
    await expect(resolveEval(ev, { baseDir: "." })).rejects.toThrow(/nonexistent/);
  });
});
