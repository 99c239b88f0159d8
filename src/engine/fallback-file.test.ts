import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fillUp, mountSupport, mountTmpfs } from "../../test/helpers/mounts.js";
import { tempDir } from "../../test/helpers/temp-store.js";
import { FallbackFile, fallbackDirs } from "./fallback-file.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});
const dir = () => {
  const d = tempDir();
  cleanups.push(d.cleanup);
  return d.dir;
};
const skip = mountSupport();

describe("fallbackDirs", () => {
  it("tries the store's directory, then STET_FALLBACK_DIR, the state and the temporary directory", () => {
    const env = { STET_FALLBACK_DIR: "/safe", XDG_STATE_HOME: "/st", TMPDIR: "/t" };
    expect(fallbackDirs("/data", env)).toEqual(["/data", "/safe", "/st/stet", "/t/stet"]);
    expect(fallbackDirs("/data", { HOME: "/home/ann", TMPDIR: "/t" })).toEqual([
      "/data",
      "/home/ann/.local/state/stet",
      "/t/stet",
    ]);
    // An empty variable is unset; one directory named twice is tried once.
    expect(fallbackDirs("/t/stet", { STET_FALLBACK_DIR: "", HOME: "/h", TMPDIR: "/t" })).toEqual([
      "/t/stet",
      "/h/.local/state/stet",
    ]);
  });
});

describe("FallbackFile", () => {
  it("keeps appending to the file that took lines, and moves every line when it stops taking them", () => {
    const [a, b] = [dir(), dir()];
    const file = new FallbackFile([a, b], "r_1.fallback.jsonl");
    expect(file.append(["1\n", "2\n"])).toBe(true);
    expect(file.path).toBe(join(a, "r_1.fallback.jsonl"));
    expect(file.append(["3\n"])).toBe(true);
    // The file can no longer be appended to (a directory took its name).
    rmSync(file.path!);
    mkdirSync(join(a, "r_1.fallback.jsonl"));
    expect(file.append(["4\n"])).toBe(true);
    expect(file.path).toBe(join(b, "r_1.fallback.jsonl"));
    expect(readFileSync(file.path!, "utf8")).toBe("1\n2\n3\n4\n");
    expect(file.refused.map((r) => r.path)).toEqual([join(a, "r_1.fallback.jsonl")]);
    expect(file.refused[0]!.message).toMatch(/^EISDIR/);
  });

  it("says false, and keeps the reasons, when no candidate takes the lines", () => {
    const blocked = dir();
    mkdirSync(join(blocked, "r_1.fallback.jsonl"));
    const file = new FallbackFile([blocked], "r_1.fallback.jsonl");
    expect(file.append(["1\n"])).toBe(false);
    expect(file.path).toBeNull();
    expect(file.refused).toEqual([
      { path: join(blocked, "r_1.fallback.jsonl"), message: expect.stringMatching(/^EISDIR/) },
    ]);
  });

  it.skipIf(skip !== null)(
    `on a full filesystem leaves no half-written file and uses the next directory${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const full = mountTmpfs(256 * 1024);
      cleanups.push(full.cleanup);
      fillUp(full.dir);
      const other = dir();
      const file = new FallbackFile([full.dir, other], "r_1.fallback.jsonl");
      const line = `${JSON.stringify({ output: "x".repeat(8_000) })}\n`;
      expect(file.append([line])).toBe(true);
      expect(file.path).toBe(join(other, "r_1.fallback.jsonl"));
      expect(readdirSync(full.dir)).toEqual(["filler"]);
      expect(existsSync(join(full.dir, "r_1.fallback.jsonl"))).toBe(false);
      expect(file.refused[0]!.message).toMatch(/^ENOSPC/);
    },
  );
});
