import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, expect } from "vitest";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

/**
 * A throwaway user project: its own directory with `node_modules/stet` linked to this repo, so
 * eval files there `import { defineEval } from "stet"` exactly as a user's would. File names may
 * have folders (`lib/helper.ts`, `node_modules/dep/package.json`).
 */
export function evalProject(files: Record<string, string>): {
  dir: string;
  db: string;
  cleanup: () => void;
} {
  const dir = mkdtempSync(join(tmpdir(), "stet-project-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(REPO, join(dir, "node_modules/stet"), "dir");
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return {
    dir,
    db: join(dir, ".stet/stet.db"),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Asserts that no file of a project's store (`.stet/`) holds any of `keys`, as text or base64.
 *
 * @example expectNoKeysInStore(dir, ["sk-…"]);
 */
export function expectNoKeysInStore(dir: string, keys: readonly string[]): void {
  const stetDir = join(dir, ".stet");
  for (const file of readdirSync(stetDir)) {
    const bytes = readFileSync(join(stetDir, file)).toString("latin1");
    for (const key of keys) {
      expect(bytes.includes(key), `${file} holds the key`).toBe(false);
      expect(bytes.includes(Buffer.from(key).toString("base64")), `${file}: base64`).toBe(false);
    }
  }
}

/**
 * A project that installed the AI SDK: `ai` and the `@ai-sdk/*` packages linked to this repo's
 * devDependencies.
 *
 * @example const { dir } = withAiSdk(project({ "e.mjs": text }));
 */
export function withAiSdk<P extends { dir: string }>(p: P): P {
  for (const name of ["ai", "@ai-sdk"]) {
    symlinkSync(join(REPO, "node_modules", name), join(p.dir, "node_modules", name), "dir");
  }
  return p;
}

/**
 * Removes after each test what `track` was given, and every `project` made: call it once at the
 * top of a test file.
 *
 * @example const { project, track } = perTest(); const p = project({ "eval.ts": text });
 */
export function perTest() {
  const cleanups: (() => void)[] = [];
  afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()));
  const track = <T extends { cleanup: () => void }>(thing: T): T => {
    cleanups.push(thing.cleanup);
    return thing;
  };
  return { track, project: (files: Record<string, string>) => track(evalProject(files)) };
}

/** JSONL text for `n` question samples with unique inputs. */
export function questions(n: number): string {
  return Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      id: `q${String(i).padStart(3, "0")}`,
      input: `question ${i}`,
      target: `answer ${i}`,
    }),
  ).join("\n");
}

export interface RawAttempt {
  sample_id: string;
  epoch: number;
  attempt: number;
  [column: string]: unknown;
}

/** Every stored attempt row, exactly as the database holds it. */
export function rawAttempts(db: string): RawAttempt[] {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return conn
      .prepare("SELECT * FROM attempts ORDER BY sample_id, epoch, attempt")
      .all() as RawAttempt[];
  } finally {
    conn.close();
  }
}

export function rawRun(db: string, runId: string): Record<string, unknown> | undefined {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return conn.prepare("SELECT * FROM runs WHERE id = ?").get(runId) as
      Record<string, unknown> | undefined;
  } finally {
    conn.close();
  }
}
