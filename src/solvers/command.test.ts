import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SolverContext } from "../core/eval.js";
import type { Sample } from "../core/types.js";
import { command } from "./command.js";
import { SolverError } from "./solver-error.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const context = (signal = new AbortController().signal): SolverContext =>
  solverContext({ runId: "run-1", epoch: 2, signal });
const sample = (input: Sample["input"]): Sample => ({ id: "sample-7", input });

/** Alive unless gone or a zombie (a container's init may never reap it). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/**
 * The descendants below sleep 300 s: a solver that waited for one, or left one running, is a
 * matter of minutes. "At once" and "gone" get 30 s, far from both, so a loaded machine cannot
 * break them and a sleep that ended by itself cannot pass for a killed one.
 */
const GRANDCHILD = "sleep 300";
const AT_ONCE_MS = 30_000;

async function waitUntilGone(pid: number, ms = AT_ONCE_MS): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return !isAlive(pid);
}

function pidFile(): string {
  return join(mkdtempSync(join(tmpdir(), "stet-command-")), "grandchild.pid");
}

async function readPid(path: string): Promise<number> {
  for (let i = 0; i < 100; i++) {
    try {
      const pid = Number(readFileSync(path, "utf8").trim());
      if (pid > 0) return pid;
    } catch {
      // Not written yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no pid in ${path}`);
}

describe("solvers.command", () => {
  it.each([
    ["a string as is", "hello\nworld", "hello\nworld"],
    ["JSON stringified", { q: [1, 2] }, '{"q":[1,2]}'],
    ["a number stringified", 42, "42"],
  ])("passes %s on stdin and returns stdout", async (_, input, expected) => {
    await expect(command({ command: "cat" })(sample(input), context())).resolves.toEqual({
      output: expected,
    });
  });

  it("trims exactly one trailing newline", async () => {
    const solver = command({ command: "printf", args: ["a\\n\\n"] });
    await expect(solver(sample(""), context())).resolves.toEqual({ output: "a\n" });
  });

  it("passes args, cwd, env and the sample's identity", async () => {
    const solver = command({
      command: "sh",
      args: ["-c", 'echo "$1 $(pwd) $GREETING $STET_SAMPLE_ID $STET_EPOCH"', "sh", "arg1"],
      cwd: "/",
      env: { GREETING: "hi" },
    });
    await expect(solver(sample(""), context())).resolves.toEqual({
      output: "arg1 / hi sample-7 2",
    });
  });

  it("fails with the exit code and the tail of stderr on a non-zero exit", async () => {
    const solver = command({ command: "sh", args: ["-c", "echo oops >&2; exit 3"] });
    const error = await Promise.resolve(solver(sample(""), context())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SolverError);
    expect(error).toMatchObject({ type: "solver" });
    expect((error as Error).message).toMatch(/exited with code 3: oops/);
  });

  it("fails as a solver error when the command does not exist", async () => {
    const solver = command({ command: "/nonexistent/stet-no-such-binary" });
    await expect(solver(sample(""), context())).rejects.toMatchObject({
      type: "solver",
      message: expect.stringContaining("cannot start"),
    });
  });

  it("does not mind a command that ignores its input", async () => {
    const solver = command({ command: "echo", args: ["done"] });
    await expect(solver(sample("x".repeat(1_000_000)), context())).resolves.toEqual({
      output: "done",
    });
  });

  it("on timeout kills the whole process tree and fails with a timeout", async () => {
    const file = pidFile();
    const solver = command({
      command: "sh",
      args: ["-c", `${GRANDCHILD} & echo $! > ${file}; wait`],
      timeoutMs: 300,
    });
    const started = Date.now();
    await expect(solver(sample(""), context())).rejects.toMatchObject({ type: "timeout" });
    expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
    expect(await waitUntilGone(await readPid(file))).toBe(true);
  });

  it("on abort kills the whole process tree and rejects with the abort reason", async () => {
    const file = pidFile();
    const controller = new AbortController();
    const solver = command({
      command: "sh",
      args: ["-c", `${GRANDCHILD} & echo $! > ${file}; wait`],
    });
    const running = solver(sample(""), context(controller.signal));
    const grandchild = await readPid(file);
    controller.abort(new Error("second Ctrl-C"));
    await expect(running).rejects.toThrow("second Ctrl-C");
    expect(await waitUntilGone(grandchild)).toBe(true);
  });

  it("kills descendants left running when the command exits", async () => {
    const file = pidFile();
    const solver = command({
      command: "sh",
      args: ["-c", `${GRANDCHILD} & echo $! > ${file}; echo ok`],
    });
    const started = Date.now();
    await expect(solver(sample(""), context())).resolves.toEqual({ output: "ok" });
    expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
    expect(await waitUntilGone(await readPid(file))).toBe(true);
  });

  it("describes itself", () => {
    expect(command({ command: "python3", args: ["agent.py"] }).describe?.()).toEqual({
      kind: "command",
      command: "python3",
      args: ["agent.py"],
    });
  });
});
