import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/types.js";

/** A real SQLite store in a fresh temp directory; `cleanup` closes it and removes the directory. */
export function tempStore(): {
  store: Store;
  dir: string;
  path: string;
  cleanup: () => Promise<void>;
} {
  const dir = mkdtempSync(join(tmpdir(), "stet-test-"));
  const path = join(dir, "stet.db");
  const store = openSqliteStore(path);
  return {
    store,
    dir,
    path,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A temp directory removed by `cleanup`. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "stet-test-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A factory of temp stores (`tempStore`), each closed and removed after its test: call it once
 * at the top of a test file.
 *
 * @example const store = storesPerTest(); it("…", async () => { const s = store(); … });
 */
export function storesPerTest(): () => Store {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  return () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    return t.store;
  };
}
