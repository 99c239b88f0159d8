import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

// `stet` as a real child process with its heap capped (`--max-old-space-size`), and what a test
// of a large run reads of the SQLite store file while the child writes it: the scale tests'
// (issue 34) parts.

const BIN = fileURLToPath(new URL("../../dist/cli/bin.js", import.meta.url));

/** `n` JSONL rows of an instant eval's dataset (`s0`…): 200,000 of them make 9.2 MB. */
export function data(n: number): string {
  let out = "";
  for (let i = 0; i < n; i++) out += `{"id":"s${i}","input":"q ${i}","target":"q ${i}"}\n`;
  return out;
}

export interface Capped {
  child: ChildProcess;
  done: Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }>;
}

/** `stet <args>` with the heap capped at `heapMb` (MB), as a real child process. */
export function capped(cwd: string, args: string[], heapMb = 128): Capped {
  const child = spawn(process.execPath, [`--max-old-space-size=${heapMb}`, BIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const done = new Promise<Awaited<Capped["done"]>>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

/** The run's committed attempts (or scorings), read from the store file while it is written. */
export function committed(db: string, table: "attempts" | "scorings" = "attempts"): number {
  if (!existsSync(db)) return 0;
  const store = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (store.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } catch {
    return 0; // the run has not made its tables yet
  } finally {
    store.close();
  }
}

/**
 * Waits until the store holds more than `count` attempts (or scorings); fails if the child
 * writing them ended first (out of memory under its cap), with what it said.
 */
export async function waitForCommitted(
  db: string,
  count: number,
  writer: Capped,
  table: "attempts" | "scorings" = "attempts",
): Promise<number> {
  let ended: Awaited<Capped["done"]> | undefined;
  void writer.done.then((end) => (ended = end));
  for (;;) {
    const n = committed(db, table);
    if (n > count) return n;
    if (ended) throw new Error(`the run ended (${ended.signal ?? ended.code}): ${ended.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
