import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOUNDS, type BoundName } from "../src/core/bounds.js";
import { runCli } from "./helpers/cli.js";
import { evalProject, perTest, questions } from "./helpers/eval-project.js";

// Numbers out of bounds (core/bounds.ts) are refused through the real CLI before anything is
// created: exit 2 for a flag, naming the flag, the value and the bound; exit 1 for an eval file
// whose defineEval field is out of bounds, naming the file and the field. The store stays byte
// for byte as it was, or is not created.

const evalOf = (name: string, extra = "") => `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: ${JSON.stringify(name)},
  dataset: "./six.jsonl",
  solver: (sample) => sample.target,
  scorers: [scorers.exact()],${extra}
});
`;

const scratch = perTest();
let project: ReturnType<typeof evalProject>;
beforeAll(async () => {
  project = evalProject({
    "six.jsonl": questions(6),
    "good.mjs": evalOf("good"),
    "huge-concurrency.mjs": evalOf("huge-concurrency", "\n  concurrency: 1_000_000_000,"),
    "huge-epochs.mjs": evalOf("huge-epochs", "\n  epochs: 10_000_000,"),
  });
  // The store an out-of-bound value must leave alone.
  const good = await runCli(["run", "good.mjs"], { cwd: project.dir });
  expect(good.code, good.stderr).toBe(0);
}, 60_000);
afterAll(() => project.cleanup());

/** Every file of the store directory, byte for byte. */
function storeBytes(dir = project.dir): Map<string, Buffer> {
  const stet = join(dir, ".stet");
  return new Map(readdirSync(stet).map((name) => [name, readFileSync(join(stet, name))]));
}

describe("out-of-bound flags", () => {
  it.each([
    [
      ["run", "good.mjs", "--concurrency", "1000000000"],
      "--concurrency",
      "1000000000",
      "1 to 1000",
    ],
    [["run", "good.mjs", "--concurrency", "10000000"], "--concurrency", "10000000", "1 to 1000"],
    [["run", "good.mjs", "--concurrency", "1e9"], "--concurrency", "1e9", "1 to 1000"],
    [["run", "good.mjs", "--epochs", "10000000"], "--epochs", "10000000", "1 to 10000"],
    [["run", "good.mjs", "--timeout", "3000000000"], "--timeout", "3000000000", "1 to 86400000"],
    [["worker", "--concurrency", "1000000000"], "--concurrency", "1000000000", "1 to 1000"],
  ])("stet %j: exit 2, the store unchanged", async (args, flag, value, bound) => {
    const before = storeBytes();
    const result = await runCli(args, { cwd: project.dir });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`option '${flag} <`);
    expect(result.stderr).toContain(`argument '${value}' is invalid`);
    expect(result.stderr).toContain(`expected an integer from ${bound}`);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(storeBytes()).toEqual(before);
  });

  it("creates no store where there was none", async () => {
    const p = scratch.project({ "six.jsonl": questions(6), "good.mjs": evalOf("good") });
    for (const args of [
      ["run", "good.mjs", "--concurrency", "1000000000"],
      ["run", "good.mjs", "--epochs", "10000000"],
    ]) {
      const result = await runCli(args, { cwd: p.dir });
      expect(result.code, result.stderr).toBe(2);
    }
    expect(existsSync(join(p.dir, ".stet"))).toBe(false);
  });

  it("the largest concurrency runs a 6-key eval to completion", async () => {
    const result = await runCli(["run", "good.mjs", "--concurrency", "1000", "--json"], {
      cwd: project.dir,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout.slice(result.stdout.indexOf("{")))).toMatchObject({
      status: "completed",
      counts: { total: 6, scored: 6 },
    });
  });
});

describe("out-of-bound defineEval fields", () => {
  it.each([
    ["huge-concurrency.mjs", "concurrency", "an integer from 1 to 1000, got 1000000000"],
    ["huge-epochs.mjs", "epochs", "an integer from 1 to 10000, got 10000000"],
  ])(
    "stet run %s: exit 1 naming the file and the field, the store unchanged",
    async (file, field, bound) => {
      const before = storeBytes();
      const result = await runCli(["run", file], { cwd: project.dir });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain(join(project.dir, file));
      expect(result.stderr).toContain(`: ${field}: expected ${bound}`);
      expect(result.stderr).not.toMatch(/^\s+at /m);
      expect(storeBytes()).toEqual(before);
    },
  );
});

describe("docs/cli.md", () => {
  // The row of the "Bounds of numeric inputs" table that documents each bound.
  const ROWS: Record<BoundName, string> = {
    concurrency: "`--concurrency`",
    epochs: "`--epochs`",
    limit: "`--limit`",
    timeoutMs: "`--timeout`",
    retries: "`retries`",
    maxCost: "`--max-cost`",
    ttlDays: "`cache.ttlDays`",
    rpm: "`--rpm`",
    tpm: "`--tpm`",
    rateWindowMs: "`rateLimits[…].windowMs`",
    failUnder: "`--fail-under`",
    passThreshold: "`--pass-threshold`",
    loadTimeoutMs: "`--load-timeout`",
    cancelWaitMs: "`stet cancel --wait`",
    port: "`--port`",
    maxBodyBytes: "`--max-body`",
    maxStreams: "`--max-streams`",
    staleMs: "`STET_STALE_MS`",
    leaseMs: "`STET_LEASE_MS`",
    exportThreads: "`stet export --threads`",
    pageLimit: "API `limit`",
    pageOffset: "API `limit`",
  };

  it("lists every bound as core/bounds.ts has it", () => {
    const page = readFileSync(fileURLToPath(new URL("../docs/cli.md", import.meta.url)), "utf8");
    const start = page.indexOf("\n## Bounds of numeric inputs\n");
    expect(start, "docs/cli.md has a Bounds of numeric inputs section").toBeGreaterThan(-1);
    const section = page.slice(start + 1);
    const table = section.split("\n\n")[2]!.split("\n");
    for (const [name, bound] of Object.entries(BOUNDS) as [
      BoundName,
      (typeof BOUNDS)[BoundName],
    ][]) {
      const row = table.find((line) => line.startsWith(`| ${ROWS[name]}`));
      expect(row, name).toBeDefined();
      const cells = row!.split("|").map((cell) => cell.trim());
      const min = "above" in bound && bound.above ? `above ${bound.min}` : String(bound.min);
      expect(cells[2]!.split(" / "), name).toContain(min);
      expect(cells[3]!.split(" / "), name).toContain(String(bound.max));
      expect(cells[4], name).toBe(bound.integer ? "yes" : "no");
    }
  });
});
