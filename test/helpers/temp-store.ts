import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../../src/store/sqlite.js";
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
