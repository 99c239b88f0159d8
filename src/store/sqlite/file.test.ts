import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isStetError } from "../../core/errors.js";
import { checkHeader } from "./file.js";
import { openSqliteStore } from "./index.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A migrated store's whole file (closed: its WAL checkpointed and gone), and a path beside it. */
async function storeBytes(): Promise<{ whole: Buffer; path: string }> {
  const dir = mkdtempSync(join(tmpdir(), "stet-header-"));
  dirs.push(dir);
  const made = join(dir, "made.db");
  await openSqliteStore(made).close();
  return { whole: readFileSync(made), path: join(dir, "stet.db") };
}

describe("checkHeader", () => {
  it("reads a store again that looks cut short while another process checkpoints it", async () => {
    // Page 1 written with the new page count, the file not yet lengthened, the WAL deleted by
    // then (SQLite's checkpoint order, seen by a process opening the store as another closed it):
    // before, that was refused as corrupt (test/sqlite.test.ts's four processes, once in CI).
    const { whole, path } = await storeBytes();
    expect(whole.length).toBeGreaterThan(4096);
    writeFileSync(path, whole.subarray(0, 4096));
    const pauses: number[] = [];
    const state = checkHeader(path, (ms) => {
      pauses.push(ms);
      writeFileSync(path, whole); // the checkpoint ends
    });
    expect(state).toBe("store");
    expect(pauses).toEqual([50]);
  });

  it("refuses a store still cut short after 350 ms of looking again, naming both sizes", async () => {
    const { whole, path } = await storeBytes();
    writeFileSync(path, whole.subarray(0, 4096));
    const pauses: number[] = [];
    let error: unknown;
    try {
      checkHeader(path, (ms) => pauses.push(ms));
    } catch (e) {
      error = e;
    }
    expect(isStetError(error, "E_STORE_CORRUPT")).toBe(true);
    expect((error as Error).message).toContain(
      `it is cut short: 4096 bytes where its header says ${whole.length}`,
    );
    expect(pauses).toEqual([50, 100, 200]);
    expect(readFileSync(path)).toEqual(whole.subarray(0, 4096)); // nothing written
  });

  it("does not wait on a sound, missing or empty file", async () => {
    const { whole, path } = await storeBytes();
    const never = () => {
      throw new Error("paused");
    };
    expect(checkHeader(path, never)).toBe("missing");
    writeFileSync(path, "");
    expect(checkHeader(path, never)).toBe("empty");
    writeFileSync(path, whole);
    expect(checkHeader(path, never)).toBe("store");
  });
});
