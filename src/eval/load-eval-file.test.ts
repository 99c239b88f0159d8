import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isEval } from "./define-eval.js";
import { loadEvalFile } from "./load-eval-file.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));

// A user's project outside the repo, with stet installed in its own node_modules.
let project: string;
beforeAll(async () => {
  if (!existsSync(join(repo, "dist/index.js"))) {
    throw new Error('these tests import "stet" from dist/: run `npm run build` first');
  }
  project = await mkdtemp(join(tmpdir(), "stet-evals-"));
  await mkdir(join(project, "node_modules"));
  await symlink(repo, join(project, "node_modules/stet"), "dir");
  await mkdir(join(project, "evals"));
});
afterAll(async () => {
  await rm(project, { recursive: true, force: true });
});

async function write(name: string, text: string): Promise<string> {
  const file = join(project, "evals", name);
  await writeFile(file, text);
  return file;
}

describe("loadEvalFile", () => {
  it('loads a .ts eval that imports defineEval from "stet"', async () => {
    const file = await write(
      "arithmetic.ts",
      `import { defineEval, type ScorerArgs } from "stet";
       interface Row { q: string; a: number }
       const rows: Row[] = [{ q: "1+1", a: 2 }];
       function exact({ output, sample }: ScorerArgs): boolean { return output === sample.target; }
       export default defineEval({
         name: "arithmetic",
         dataset: rows,
         sample: (row: Row) => ({ input: row.q, target: String(row.a) }),
         solver: (sample) => String(sample.input),
         scorers: [exact],
         epochs: 2,
       });`,
    );
    const loaded = await loadEvalFile(file);
    expect(loaded).toMatchObject({ path: file, baseDir: join(project, "evals") });
    expect(isEval(loaded.eval)).toBe(true);
    expect(loaded.eval).toMatchObject({ name: "arithmetic", epochs: 2 });
  });

  it('loads a .mjs eval importing "stet", given a relative path', async () => {
    const file = await write(
      "plain.mjs",
      `import { defineEval } from "stet";
       export default defineEval({ name: "plain", dataset: "./data.jsonl", solver: () => "x",
         scorers: [{ name: "one", score: () => 1 }] });`,
    );
    const loaded = await loadEvalFile(relative(process.cwd(), file));
    expect(loaded.path).toBe(file);
    expect(loaded.eval).toMatchObject({ name: "plain", dataset: "./data.jsonl" });
  });

  it.each([
    ["object.mjs", "export default"],
    ["object.js", "export default"],
    ["object.cjs", "module.exports ="],
    ["object.mts", "export default"],
  ])("wraps a plain definition object (%s)", async (name, prefix) => {
    const file = await write(
      name,
      `${prefix} { name: "bare", dataset: [{ input: 1 }], solver: () => 1, scorers: [function one() { return 1; }] };`,
    );
    const { eval: ev } = await loadEvalFile(file);
    expect(isEval(ev)).toBe(true);
    expect(ev.name).toBe("bare");
  });

  it.each(["ts", "mjs"])(
    "says how to install stet when a .%s eval cannot import it",
    async (ext) => {
      const elsewhere = await mkdtemp(join(tmpdir(), "stet-no-modules-"));
      try {
        const file = join(elsewhere, `eval.${ext}`);
        await writeFile(file, 'import { defineEval } from "stet";\nexport default defineEval;\n');
        await expect(loadEvalFile(file)).rejects.toMatchObject({
          code: "E_EVAL_LOAD",
          message: expect.stringContaining("npm install --save-dev stet"),
        });
      } finally {
        await rm(elsewhere, { recursive: true, force: true });
      }
    },
  );

  it.each([
    ["missing.ts", null, /eval file not found: .*missing\.ts/],
    ["eval.py", "print(1)", /cannot load .*eval\.py: an eval file ends in \.ts/],
    [
      "named.mjs",
      "export const a = 1, b = 2;",
      /named\.mjs must default-export an eval .* it has no default export \(it exports a, b\)/,
    ],
    [
      "named.ts",
      "export const a: number = 1;",
      /named\.ts must default-export an eval .* it has no default export \(it exports a\)/,
    ],
    ["number.mjs", "export default 42;", /its default export is 42/],
    [
      "function.mjs",
      "export default function makeEval() {}",
      /its default export is a function \(makeEval\)/,
    ],
    [
      "invalid.mjs",
      'export default { name: "bad", dataset: [], solver: 1, scorers: [] };',
      /invalid\.mjs: invalid eval definition "bad": solver: expected a function/,
    ],
    [
      "syntax.ts",
      "export default defineEval({ name: ",
      /failed to load eval file .*syntax\.ts: .+/,
    ],
    ["syntax.mjs", "export default {", /failed to load eval file .*syntax\.mjs: .+/],
    [
      "throws.mjs",
      'throw new Error("boom at load");',
      /failed to load eval file .*throws\.mjs: boom at load/,
    ],
  ])("rejects %s with E_EVAL_LOAD", async (name, text, message) => {
    const file = text === null ? join(project, "evals", name) : await write(name, text);
    const loading = loadEvalFile(file);
    await expect(loading).rejects.toMatchObject({ code: "E_EVAL_LOAD" });
    await expect(loading).rejects.toThrow(message);
  });

  it.each(["never.mjs", "never.ts"])(
    "refuses %s, whose top-level await never settles, once the load timeout passed",
    async (name) => {
      const file = await write(name, "await new Promise(() => {});\nexport default {};\n");
      const loading = loadEvalFile(file, { timeoutMs: 300 });
      await expect(loading).rejects.toMatchObject({
        code: "E_EVAL_LOAD",
        message: `eval file ${file} did not finish loading within 300 ms: its top-level code never settled (an await that never resolves?); fix it, or give it longer with --load-timeout <ms>`,
      });
    },
  );

  it("loads a module whose top-level await settles within the timeout", async () => {
    const file = await write(
      "slow.mjs",
      `import { defineEval } from "stet";
       await new Promise((resolve) => setTimeout(resolve, 50));
       export default defineEval({ name: "slow", dataset: [{ input: "a" }], solver: (s) => s.input, scorers: [function exact() { return 1; }] });`,
    );
    const { eval: ev } = await loadEvalFile(file, { timeoutMs: 30_000 });
    expect(ev.name).toBe("slow");
  });
});
