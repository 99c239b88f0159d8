import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { recordLoads } from "./helpers/loaded-modules.js";

// A TypeScript eval is bundled by esbuild into node_modules/.cache/stet/ts/ and imported from
// there; tsx loads only what that cannot reproduce. Everything here goes through the real CLI.

/** A package in the user's node_modules with separate ESM and CommonJS builds. */
const greeting = {
  "node_modules/greeting/package.json": JSON.stringify({
    name: "greeting",
    exports: { import: "./esm.mjs", require: "./cjs.cjs" },
  }),
  "node_modules/greeting/esm.mjs": 'export const greet = (s) => "esm:" + s;\n',
  "node_modules/greeting/cjs.cjs": 'exports.greet = (s) => "cjs:" + s;\n',
};

const kinds = (suffix: string) => `export enum Kind {
  Upper = "upper",
  Lower = "lower",
}
export type Style = { kind: Kind };
export function shout(text: string, style: Style): string {
  return (style.kind === Kind.Upper ? text.toUpperCase() : text) + "${suffix}";
}
export function where(): string {
  return new Error("where").stack ?? "";
}
`;

// Line 11 creates the Error whose stack the sample "here" returns; kinds.ts line 10 the one of "stack".
const evalTs = `import type { Sample } from "stet";
import { defineEval, scorers } from "stet";
import { greet } from "greeting";
import { Kind, shout, where, type Style } from "./lib/kinds.js";

class Solver {
  constructor(private readonly style: Style) {}
  solve(sample: Sample): string {
    if (sample.id === "stack") return where();
    if (sample.id === "here") {
      const error = new Error("here");
      return error.stack ?? "";
    }
    return greet(shout(String(sample.input), this.style));
  }
}
const settings = { name: "fast", concurrency: 2 } satisfies { name: string; concurrency: number };
const solver = new Solver({ kind: Kind.Upper });
export default defineEval({
  ...settings,
  dataset: [
    { id: "a", input: "hi", target: "esm:HI" },
    { id: "stack", input: "", target: "" },
    { id: "here", input: "", target: "" },
  ],
  solver: (sample) => solver.solve(sample),
  scorers: [scorers.exact()],
});
`;

const { project, track } = perTest();

function run(dir: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(["run", ...args], { cwd: dir, env });
}

function recorded() {
  const loads = track(recordLoads());
  return loads;
}

const cacheDir = (dir: string) => join(dir, "node_modules/.cache/stet/ts");
/** The cache's files: manifests (.json) first, then outputs (.mjs), then anything else. */
const cacheFiles = (dir: string) => {
  const names = existsSync(cacheDir(dir)) ? readdirSync(cacheDir(dir)) : [];
  const rank = (name: string) => ["json", "mjs"].indexOf(name.split(".").pop()!) >>> 0;
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
};
const outputOf = (db: string, sampleId: string) =>
  rawAttempts(db).find((a) => a.sample_id === sampleId)?.output;
const usedTsx = (modules: string[]) => modules.some((m) => m.includes("node_modules/tsx/"));

describe("the TypeScript fast path", () => {
  it("runs an eval with an enum, type-only imports, a local .ts import and a package from node_modules", async () => {
    const p = project({ "eval.ts": evalTs, "lib/kinds.ts": kinds(""), ...greeting });
    const loads = recorded();
    const result = await run(p.dir, ["eval.ts"], loads.env);
    expect(result.code, result.stderr).toBe(0);
    // The package's ESM build, as Node's resolution from the eval's project picks it.
    expect(outputOf(p.db, "a")).toBe(JSON.stringify("esm:HI"));

    const files = cacheFiles(p.dir);
    expect(files).toEqual([
      expect.stringMatching(/^[0-9a-f]+\.json$/),
      expect.stringMatching(/^[0-9a-f]+\.mjs$/),
    ]);
    const manifest = JSON.parse(readFileSync(join(cacheDir(p.dir), files[0]!), "utf8"));
    expect(manifest).toMatchObject({ loader: "esm", output: files[1] });
    expect(Object.keys(manifest.files)).toEqual(
      expect.arrayContaining([join(p.dir, "eval.ts"), join(p.dir, "lib/kinds.ts")]),
    );
    const modules = loads.modules();
    expect(modules).toContain(join(cacheDir(p.dir), files[1]!));
    expect(usedTsx(modules)).toBe(false);
  });

  it("points stack traces at the .ts lines, in the eval and in its local import", async () => {
    const p = project({ "eval.ts": evalTs, "lib/kinds.ts": kinds(""), ...greeting });
    const result = await run(p.dir, ["eval.ts"]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(outputOf(p.db, "here") as string)).toMatch(
      new RegExp(`^Error: here\\n\\s+at .*${escape(join(p.dir, "eval.ts"))}:11:21\\)`),
    );
    expect(JSON.parse(outputOf(p.db, "stack") as string)).toMatch(
      new RegExp(`^Error: where\\n\\s+at where .*${escape(join(p.dir, "lib/kinds.ts"))}:10:10\\)`),
    );
  });

  it.each([
    ["the eval", "eval.ts", (text: string) => text.replace('name: "fast"', 'name: "edited"')],
    ["its local import", "lib/kinds.ts", () => kinds("!")],
  ])("rebuilds when %s changes", async (_what, file, edit) => {
    const p = project({ "eval.ts": evalTs, "lib/kinds.ts": kinds(""), ...greeting });
    expect((await run(p.dir, ["eval.ts", "--json"])).code).toBe(0);
    const before = cacheFiles(p.dir);

    const path = join(p.dir, file);
    writeFileSync(path, edit(readFileSync(path, "utf8")));
    const loads = recorded();
    const edited = await run(p.dir, ["eval.ts", "--json"], loads.env);
    expect(edited.code, edited.stderr).toBe(0);
    const after = cacheFiles(p.dir);
    // One manifest, one output: the new output replaced the old one.
    expect(after).toHaveLength(2);
    expect(after[0]).toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
    expect(loads.modules()).toContain(join(cacheDir(p.dir), after[1]!));
    const summary = JSON.parse(edited.stdout) as { evalName: string };
    if (file === "eval.ts") expect(summary.evalName).toBe("edited");
    else expect(rawAttempts(p.db).map((a) => a.output)).toContain(JSON.stringify("esm:HI!"));
  });

  it.each([
    ["eval.ts", 'import { defineEval } from "stet";\nconst n: number = {;\n', "eval.ts:2:20"],
    ["lib/kinds.ts", "export enum Kind {\n  Upper = \n", "lib/kinds.ts:3:1"],
  ])("names file:line:col of a syntax error in %s, and starts no run", async (file, text, at) => {
    const p = project({ "eval.ts": evalTs, "lib/kinds.ts": kinds(""), ...greeting, [file]: text });
    const result = await run(p.dir, ["eval.ts"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      `failed to load eval file ${join(p.dir, "eval.ts")}: ${join(p.dir, at)}: `,
    );
    expect(existsSync(p.db)).toBe(false);
  });

  it("two processes warming the cache at once both succeed", async () => {
    const p = project({ "eval.ts": evalTs, "lib/kinds.ts": kinds(""), ...greeting });
    const results = await Promise.all(
      ["a.db", "b.db", "c.db"].map((db) => run(p.dir, ["eval.ts", "--store", db])),
    );
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    for (const db of ["a.db", "b.db", "c.db"]) {
      expect(outputOf(join(p.dir, db), "a")).toBe(JSON.stringify("esm:HI"));
    }
    // No temporary file left behind; one manifest and the output it names.
    expect(cacheFiles(p.dir)).toHaveLength(2);
  });

  it("resolves tsconfig paths aliases and applies the nearest tsconfig.json", async () => {
    const p = project({
      "tsconfig.json": JSON.stringify({
        compilerOptions: {
          baseUrl: ".",
          paths: { "@lib/*": ["lib/*"] },
          experimentalDecorators: true,
        },
      }),
      "lib/kinds.ts": kinds(""),
      "eval.ts": `import { defineEval, scorers } from "stet";
import { Kind, shout } from "@lib/kinds";
function twice(_target: object, _key: string, d: PropertyDescriptor) {
  const f = d.value as (s: string) => string;
  d.value = (s: string) => f(f(s));
}
class Doubler { @twice static run(s: string) { return s + "x"; } }
export default defineEval({
  name: "aliased",
  dataset: [{ id: "a", input: "hi", target: "HIxx" }],
  solver: (s) => Doubler.run(shout(String(s.input), { kind: Kind.Upper })),
  scorers: [scorers.exact()],
});
`,
    });
    const loads = recorded();
    const result = await run(p.dir, ["eval.ts"], loads.env);
    expect(result.code, result.stderr).toBe(0);
    expect(outputOf(p.db, "a")).toBe(JSON.stringify("HIxx"));
    expect(usedTsx(loads.modules())).toBe(false);
  });
});

describe("what goes to tsx instead", () => {
  const plain = (extra: string) => `import { defineEval, scorers } from "stet";
${extra}
export default defineEval({
  name: "plain",
  dataset: [{ id: "a", input: "hi", target: "hi" }],
  solver: (s) => String(s.input),
  scorers: [scorers.exact()],
});
`;

  it.each([
    ["a .cts eval", "eval.cts", {}],
    ["STET_TS_LOADER=tsx", "eval.ts", { STET_TS_LOADER: "tsx" }],
  ])("%s", async (_case, file, env) => {
    const p = project({ [file]: plain("") });
    const loads = recorded();
    const result = await run(p.dir, [file], { ...loads.env, ...env });
    expect(result.code, result.stderr).toBe(0);
    expect(outputOf(p.db, "a")).toBe(JSON.stringify("hi"));
    expect(usedTsx(loads.modules())).toBe(true);
    expect(cacheFiles(p.dir)).toEqual([]);
  });

  it("an eval whose node_modules is a symlink into another tree, which holds no cache then", async () => {
    const p = project({ "eval.ts": plain("") });
    const elsewhere = mkdtempSync(join(tmpdir(), "stet-modules-"));
    track({ cleanup: () => rmSync(elsewhere, { recursive: true, force: true }) });
    renameSync(join(p.dir, "node_modules"), join(elsewhere, "node_modules"));
    symlinkSync(join(elsewhere, "node_modules"), join(p.dir, "node_modules"), "dir");
    const loads = recorded();
    const result = await run(p.dir, ["eval.ts"], loads.env);
    expect(result.code, result.stderr).toBe(0);
    expect(usedTsx(loads.modules())).toBe(true);
    expect(existsSync(join(elsewhere, "node_modules/.cache"))).toBe(false);
  });

  it.each([
    [
      "import.meta.resolve",
      {
        "eval.ts": plain("console.log(import.meta.resolve('stet').length > 0);"),
        "package.json": '{ "type": "module" }',
      },
      "import.meta",
    ],
    [
      "the package's own name",
      {
        "eval.ts": plain('import { Kind } from "user-evals/kinds";\nconsole.log(Kind.Upper);'),
        "package.json": JSON.stringify({
          name: "user-evals",
          exports: { "./kinds": "./lib/kinds.ts" },
        }),
        "lib/kinds.ts": kinds(""),
      },
      "do not resolve from the cache",
    ],
  ])(
    "remembers a graph that needs tsx (%s): the next run does not transpile it again",
    async (_case, files, reason) => {
      const p = project(files);
      const first = recorded();
      expect((await run(p.dir, ["eval.ts"], first.env)).code).toBe(0);
      expect(first.modules()).toContain("src/eval/ts-transpile.ts");
      // The manifest alone: no output is kept for a graph that tsx loads.
      const [manifest, ...rest] = cacheFiles(p.dir);
      expect(rest).toEqual([]);
      expect(JSON.parse(readFileSync(join(cacheDir(p.dir), manifest!), "utf8"))).toMatchObject({
        loader: "tsx",
        reason: expect.stringContaining(reason),
      });
      const loads = recorded();
      expect((await run(p.dir, ["eval.ts"], loads.env)).code).toBe(0);
      // tsx loads esbuild itself; stet's transpiler stays unloaded.
      expect(loads.modules()).not.toContain("src/eval/ts-transpile.ts");
      expect(usedTsx(loads.modules())).toBe(true);
    },
  );
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
