import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { STALE_TEMP_MS, writeFileAtomic, writeStreamAtomic } from "./write-file-atomic.js";

const MODULE = fileURLToPath(new URL("./write-file-atomic.ts", import.meta.url));

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "stet-atomic-"));
  dirs.push(dir);
  return dir;
}

/**
 * A process that starts a streamed atomic write of `path`, writes a first piece, says so, and
 * is SIGKILLed there: what it leaves beside the target.
 */
async function killedWriter(path: string): Promise<string[]> {
  const code = `
    import { writeStreamAtomic } from ${JSON.stringify(MODULE)};
    await writeStreamAtomic(${JSON.stringify(path)}, async (write) => {
      await write("half of a document");
      process.stdout.write("writing\\n");
      await new Promise(() => {});
    });`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
  const ended = new Promise((resolve) => child.on("close", resolve));
  child.kill("SIGKILL");
  await ended;
  return readdirSync(join(path, "..")).filter((name) => name.endsWith(".tmp"));
}

/** Backdates a file's modification past the stale limit. */
function age(path: string): void {
  const then = (Date.now() - STALE_TEMP_MS - 60_000) / 1000;
  utimesSync(path, then, then);
}

describe("atomic writes", () => {
  it("a later write of the same target removes the temporary file a SIGKILLed write left, once it is stale", async () => {
    const dir = folder();
    const target = join(dir, "results.jsonl");
    writeFileSync(target, "old\n");
    const left = await killedWriter(target);
    expect(left).toHaveLength(1);
    expect(readFileSync(target, "utf8")).toBe("old\n"); // the kill left the old file whole

    // Fresh, it stays: a writer of the same number on another machine may still be writing it.
    await writeFileAtomic(target, "new\n");
    expect(readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual(left);

    age(join(dir, left[0]!));
    await writeStreamAtomic(target, (write) => write("newer\n"));
    expect(readdirSync(dir).sort()).toEqual(["results.jsonl"]);
    expect(readFileSync(target, "utf8")).toBe("newer\n");
  }, 60_000);

  it("leaves a live process's temporary file, and another target's, however old", async () => {
    const dir = folder();
    const target = join(dir, "out.json");
    const live = join(dir, `.out.json.${process.pid}-0123456789ab.tmp`);
    const other = join(dir, `.other.json.999999999-0123456789ab.tmp`);
    for (const path of [live, other]) {
      writeFileSync(path, "partial");
      age(path);
    }
    await writeFileAtomic(target, "{}\n");
    expect(readdirSync(dir).sort()).toEqual(
      [other, live]
        .map((p) => p.slice(dir.length + 1))
        .concat("out.json")
        .sort(),
    );
  });
});
