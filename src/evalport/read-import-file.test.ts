import { constants } from "node:buffer";
import { truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/temp-store.js";
import { isStetError } from "../core/errors.js";
import { readImportFile } from "./read-import-file.js";

const { dir, cleanup } = tempDir();
afterAll(() => cleanup());

/** The refusal `readImportFile` throws for `text` written to `name` (made `size` bytes, sparse). */
async function refusal(name: string, text: string, size?: number) {
  const path = join(dir, name);
  writeFileSync(path, text);
  if (size !== undefined) truncateSync(path, size);
  const error = await readImportFile(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isStetError(error, "E_INVALID_INPUT")) throw new Error(`not refused: ${String(error)}`);
  return { path, message: error.message, details: error.details as Record<string, unknown> };
}

describe("readImportFile's refusals", () => {
  // A file broken on each of its lines is refused naming its first problems: the rest are
  // counted, not held (a 1,000,000-line file's 3,000,000 errors took 2.2 GB to refuse).
  it.each([
    ["a Results JSONL", "broken.jsonl", "{oops\n".repeat(3_000), 3_000],
    [
      "a fallback JSONL",
      "broken.fallback.jsonl",
      `${JSON.stringify({ runId: "r_1", sampleId: "q1", epoch: 1 })}\n${"{oops\n".repeat(2_999)}`,
      undefined,
    ],
  ])("keeps the first 1,000 errors of %s and counts the others", async (_what, name, text, all) => {
    const { path, message, details } = await refusal(name, text);
    const errors = details.errors as { line?: number }[];
    const omitted = details.omitted as number;
    expect(errors).toHaveLength(1_000);
    // The fallback file's first line has one error for each missing field.
    if (all !== undefined) expect(errors.length + omitted).toBe(all);
    expect(omitted).toBeGreaterThan(1_900);
    expect(errors.at(-1)!.line).toBeLessThan(1_001);
    const shown = message.split("\n").filter((line) => line.startsWith(`  ${path}:`));
    expect(shown).toHaveLength(20);
    expect(shown.at(-1)).toMatch(/line \d+ is not JSON/);
    expect(message).toContain(`… and ${errors.length + omitted - 20} more`);
  });

  // A file longer than one string can be (V8: 2^29 − 24 characters) made sparse: no disk used.
  it("refuses a ResultSet longer than one string can be, and reads a JSONL a line at a time", async () => {
    const size = constants.MAX_STRING_LENGTH + 2 ** 20;
    const whole = await refusal("big.json", "", size);
    expect(whole.message).toBe(
      `${whole.path} is 513 MiB: a ResultSet is read as one text, which can be at most ${constants.MAX_STRING_LENGTH.toLocaleString("en-US")} characters here; import the run's Results JSONL (\`stet run --output\`), which is read a line at a time, or copy the whole store (\`stet backup\`, \`stet restore\`); nothing was imported`,
    );
    // The same bytes as a JSONL: no whole text is made, and its one line is what is too long.
    const line = await refusal("big.jsonl", "", size);
    expect(line.message).toMatch(new RegExp(`^${line.path}:1 is 513 MiB: a line as one text`));
  });

  it("names a row of `stet export --format jsonl` as such, with what to import instead", async () => {
    const row = {
      runId: "r_1",
      sampleId: "q1",
      epoch: 1,
      attempt: 1,
      status: "scored",
      output: "2",
      scores: [{ scorer: "exact", value: 1 }],
      usage: null,
      retries: 0,
      startedAt: "2026-12-07T23:05:20.100Z",
      completedAt: "2026-12-07T23:05:20.101Z",
      durationMs: 1,
      error: null,
      provenance: "executed",
    };
    const { path, message } = await refusal("rows.jsonl", `${JSON.stringify(row)}\n`.repeat(3));
    expect(message).toBe(
      `${path}:1 is a row of \`stet export --format jsonl\` (a key's outcome), which \`stet import\` does not read: export the run with \`--format resultset\`, or import the Results JSONL its \`--output\` wrote; nothing was imported`,
    );
  });
});
