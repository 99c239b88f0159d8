import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as z from "zod";
import { STET_BIN } from "./cli.js";

/** test/fixtures/bad: the corpus's files and its manifest. */
export const CORPUS = fileURLToPath(new URL("../fixtures/bad", import.meta.url));

/** A file generated before the cases run (too big, or too odd, to keep in the repository). */
const madeSchema = z.strictObject({
  name: z.string().regex(/^[\w.-]+$/),
  /** The file's text: each `[piece, n]` is `piece` repeated n times, in order. */
  pieces: z.array(z.tuple([z.string(), z.number().int().min(1)])).min(1),
});

const common = {
  id: z.string().regex(/^[\w./-]+$/),
  /** Why this input is bad, when the id does not say it all. */
  note: z.string().optional(),
  /** A fixture under test/fixtures/bad, named by `{file}`. */
  file: z.string().optional(),
  make: madeSchema.optional(),
  /** Substrings the answer must contain: what names the input (file, line, flag, field, id). */
  says: z.array(z.string().min(1)).min(1),
  /** Not run yet: why (work another change brings). */
  pending: z.string().optional(),
};

const cliCaseSchema = z.strictObject({
  ...common,
  argv: z.array(z.string()).min(1),
  env: z.record(z.string(), z.string()).optional(),
  /** Exit codes allowed (default 1 or 2). */
  exit: z.array(z.number().int().min(1).max(2)).min(1).default([1, 2]),
  /** "both": a store is involved, so the case runs on SQLite and on PostgreSQL. */
  stores: z.enum(["sqlite", "postgres", "both"]).default("sqlite"),
});

const apiCaseSchema = z.strictObject({
  ...common,
  request: z.strictObject({
    method: z.enum(["GET", "POST"]).default("GET"),
    path: z.string().startsWith("/"),
    headers: z.record(z.string(), z.string()).optional(),
    /** The body as text; or `json`, sent as JSON; or `{file}` (the fixture or made file). */
    body: z.string().optional(),
    json: z.unknown().optional(),
    bodyFromFile: z.boolean().optional(),
  }),
  /** The HTTP statuses allowed: 4xx only, a bad request is never the server's fault. */
  status: z.array(z.number().int().min(400).max(499)).min(1),
  code: z.string(),
  stores: z.enum(["sqlite", "postgres", "both"]).default("both"),
});

export type CliCase = z.infer<typeof cliCaseSchema>;
export type ApiCase = z.infer<typeof apiCaseSchema>;
export type BadCase = ({ kind: "cli" } & CliCase) | ({ kind: "api" } & ApiCase);

/**
 * The manifest: one case per line of test/fixtures/bad/manifest.jsonl, checked (unique ids,
 * every `file` present, nothing named outside the corpus).
 *
 * @example const cases = loadManifest(); cases.filter((c) => c.kind === "cli");
 */
export function loadManifest(): BadCase[] {
  const text = readFileSync(join(CORPUS, "manifest.jsonl"), "utf8");
  const seen = new Set<string>();
  const cases: BadCase[] = [];
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const where = `manifest.jsonl:${index + 1}`;
    const raw = JSON.parse(line) as Record<string, unknown>;
    const parsed =
      "request" in raw
        ? { kind: "api" as const, ...apiCaseSchema.parse(raw) }
        : { kind: "cli" as const, ...cliCaseSchema.parse(raw) };
    if (seen.has(parsed.id)) throw new Error(`${where}: case id ${parsed.id} is used twice`);
    seen.add(parsed.id);
    if (parsed.file !== undefined && !existsSync(join(CORPUS, parsed.file))) {
      throw new Error(`${where}: ${parsed.file} is not in test/fixtures/bad`);
    }
    if (parsed.file !== undefined && parsed.make !== undefined) {
      throw new Error(`${where}: a case has a file or makes one, not both`);
    }
    cases.push(parsed);
  }
  return cases;
}

/**
 * Writes every case's `make` file into `dir`. Cases may share a file by giving the same name
 * and pieces; one name with other pieces is an error.
 *
 * @example makeFiles(cases, join(root, "made"));
 */
export function makeFiles(cases: readonly BadCase[], dir: string): void {
  mkdirSync(dir, { recursive: true });
  const made = new Map<string, string>();
  for (const c of cases) {
    if (!c.make) continue;
    const pieces = JSON.stringify(c.make.pieces);
    const held = made.get(c.make.name);
    if (held === pieces) continue;
    if (held !== undefined) throw new Error(`${c.id}: another case makes ${c.make.name} otherwise`);
    made.set(c.make.name, pieces);
    writeFileSync(join(dir, c.make.name), c.make.pieces.map(([p, n]) => p.repeat(n)).join(""));
  }
}

/** Replaces every `{name}` of `values` in `text`; an unknown placeholder is an error. */
export function fill(text: string, values: Readonly<Record<string, string>>): string {
  return text.replace(/\{([a-z0-9-]+)\}/g, (whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`unknown placeholder ${whole} in ${text}`);
    return value;
  });
}

/**
 * sha256 of every file under `dir` (recursively, by path relative to it), skipping the names in
 * `skip`: equal maps mean not a byte changed, nothing was added and nothing removed.
 *
 * @example expect(hashTree(dir)).toEqual(before);
 */
export function hashTree(dir: string, skip: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (skip.includes(entry.name)) continue;
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isSymbolicLink()) out[relative(dir, path)] = "symlink";
      else {
        const hash = createHash("sha256").update(readFileSync(path)).digest("hex");
        out[relative(dir, path)] = `${hash} ${statSync(path).size}`;
      }
    }
  };
  walk(dir);
  return out;
}

/** sha256 of one file, lowercase hex. */
export function sha256Of(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** A fresh directory `name` under `parent`, with a random suffix. */
export function freshDir(parent: string, name: string): string {
  const dir = join(parent, `${name.replace(/\W+/g, "-")}-${randomBytes(3).toString("hex")}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Copies `from` to `to` byte for byte, creating `to`'s folder. */
export function copyInto(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, readFileSync(from));
}

/**
 * Runs at most `n` of the given tasks at once.
 *
 * @example const limit = limiter(4); await Promise.all(jobs.map((job) => limit(job)));
 */
export function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    while (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
    try {
      return await task();
    } finally {
      active -= 1;
      waiting.shift()?.();
    }
  };
}

export interface CliOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Killed by the hang guard. */
  hung: boolean;
}

/** The most output kept of a case: an answer that quotes a 10 MB input is a failure anyway. */
const KEEP = 1_000_000;

/**
 * Runs `stet <argv>` (the built CLI) to its end; a process still alive after `hangMs` is
 * killed and reported `hung` (a hang guard, never an expectation).
 *
 * @example const o = await runStet(["validate", file], { cwd, env });
 */
export function runStet(
  argv: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; hangMs: number },
): Promise<CliOutcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [STET_BIN, ...argv], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      if (stdout.length < KEEP) stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      if (stderr.length < KEEP) stderr += d;
    });
    let hung = false;
    const guard = setTimeout(() => {
      hung = true;
      child.kill("SIGKILL");
    }, options.hangMs);
    child.on("close", (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr, hung });
    });
  });
}
