import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { prepareOutputFile } from "./output-file.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "stet-output-file-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const refusal = (message: string) =>
  expect.objectContaining({ code: "E_USAGE", message: expect.stringContaining(message) });

describe("prepareOutputFile", () => {
  it("creates missing folders and leaves no file behind", async () => {
    const path = join(dir, "a/b/c/results.jsonl");
    await prepareOutputFile(path, "--output");
    expect(readdirSync(join(dir, "a/b/c"))).toEqual([]);
  });

  it("leaves an existing file's bytes alone", async () => {
    const path = join(dir, "results.jsonl");
    writeFileSync(path, "kept\n");
    await prepareOutputFile(path, "--output");
    expect(readFileSync(path, "utf8")).toBe("kept\n");
    expect(readdirSync(dir)).toEqual(["results.jsonl"]);
  });

  it("refuses a directory, a trailing slash, a path under a file and an empty path", async () => {
    mkdirSync(join(dir, "out"));
    writeFileSync(join(dir, "file"), "");
    await expect(prepareOutputFile(join(dir, "out"), "--output")).rejects.toThrow(
      refusal(`--output ${join(dir, "out")}: is a directory`),
    );
    await expect(prepareOutputFile(`${dir}/new/`, "-o")).rejects.toThrow(
      refusal(`-o ${dir}/new/: names a directory`),
    );
    await expect(prepareOutputFile(join(dir, "file/x.json"), "-o")).rejects.toThrow(
      refusal("a part of the path is a file, not a folder"),
    );
    await expect(prepareOutputFile(join(dir, "file/deeper/x.json"), "-o")).rejects.toThrow(
      refusal("a part of the path is a file, not a folder"),
    );
    await expect(prepareOutputFile("", "-o")).rejects.toThrow(refusal('-o "": is empty'));
  });
});
