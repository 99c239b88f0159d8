import { build } from "esbuild";
import { ESLint } from "eslint";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");

/**
 * The dependency rule of docs/ARCHITECTURE.md, checked against the lint configuration itself: each
 * import that breaks it, written into a module of the folder it would break, must be refused.
 */
describe("the layering rule is enforced by lint", () => {
  const eslint = new ESLint({ cwd: ROOT });
  const lint = async (filePath: string, code: string) => {
    const [result] = await eslint.lintText(code, { filePath: join(ROOT, filePath) });
    return result!.messages.filter((m) => m.ruleId === "no-restricted-imports");
  };

  it.each([
    ["src/cli/commands/x.ts", "../../engine/execute-run.js", "cli never sees the engine"],
    ["src/cli/x.ts", "../engine/owner.js", "cli never sees the engine"],
    [
      "src/cli/commands/x.ts",
      "../../server/routes/runs-read.js",
      "cli sees the server's surface only",
    ],
    ["src/server/routes/x.ts", "../../cli/open-store.js", "server imports nothing of cli"],
    ["src/server/x.ts", "../engine/owner.js", "server never sees the engine"],
    ["src/server/x.ts", "../store/sqlite/index.js", "server sees the Store port only"],
    ["src/evalport/x.ts", "../runs/start-run.js", "evalport never drives the lifecycle"],
    ["src/evalport/x.ts", "../engine/acquire.js", "evalport never sees the engine"],
    ["src/store/x.ts", "../engine/owner.js", "store imports core only"],
    ["src/store/contract/x.ts", "../../runs/run-status.js", "store imports core only"],
    ["src/engine/x.ts", "../store/sqlite/index.js", "engine sees the Store port only"],
    ["src/engine/x.ts", "../runs/run-status.js", "engine never sees runs"],
    ["src/core/x.ts", "../store/types.js", "core imports nothing of ours"],
    ["src/core/x.ts", "node:fs", "core is pure"],
    ["src/ui/x.ts", "../server/api-error.js", "ui imports nothing of the server"],
    ["src/api/x.ts", "../runs/read-run.js", "api imports core only"],
    ["src/api/x.ts", "../server/run-view.js", "api imports core only"],
    ["src/eval/x.ts", "../evalport/load-suite.js", "eval never sees evalport"],
    ["src/runs/x.ts", "../server/executions.js", "runs never sees a shell"],
    ["src/sandbox/x.ts", "../scorers/code.js", "sandbox imports core only"],
    ["src/sandbox/x.ts", "../engine/owner.js", "sandbox imports core only"],
  ])("%s importing %s is refused (%s)", async (file, specifier) => {
    const errors = await lint(file, `import { y } from "${specifier}";\nexport const x = y;\n`);
    expect(errors).toHaveLength(1);
  });

  it.each([
    ["src/cli/commands/x.ts", "../../engine/execute-run.js", "cli never sees the engine"],
    ["src/cli/x.ts", "../engine/owner.js", "cli never sees the engine"],
    ["src/server/routes/x.ts", "../../engine/owner.js", "server never sees the engine"],
    ["src/core/x.ts", "../store/types.js", "core imports nothing of ours"],
    ["src/runs/a/b/c/x.ts", "../../../../server/index.js", "runs never sees a shell, at any depth"],
  ])("%s importing %s dynamically, import(), is refused (%s)", async (file, specifier) => {
    const [result] = await eslint.lintText(
      `export const x = async () => (await import("${specifier}")).y;\n`,
      { filePath: join(ROOT, file) },
    );
    const layering = result!.messages.filter(
      (m) =>
        m.ruleId === "no-restricted-syntax" &&
        / may import only | imports nothing of ours/.test(m.message),
    );
    expect(layering).toHaveLength(1);
  });

  it("allows a dynamic import() the table allows", async () => {
    const [result] = await eslint.lintText(
      `export const x = async () => (await import("../../runs/resume-run.js")).planResume;\n`,
      { filePath: join(ROOT, "src/cli/commands/x.ts") },
    );
    expect(result!.messages).toEqual([]);
  });

  it.each([
    ["src/runs/a/b/c/x.ts", "../../../../server/index.js", "runs never sees a shell, at any depth"],
  ])("%s importing %s statically is refused (%s)", async (file, specifier) => {
    const errors = await lint(file, `import { y } from "${specifier}";\nexport const x = y;\n`);
    expect(errors).toHaveLength(1);
  });

  it.each([
    ["src/cli/commands/x.ts", "../../runs/resume-run.js"],
    ["src/cli/commands/x.ts", "../../server/index.js"],
    ["src/server/routes/x.ts", "../../runs/cancel-run.js"],
    ["src/runs/x.ts", "../engine/execute-run.js"],
    ["src/engine/x.ts", "../store/types.js"],
    ["src/store/contract/x.ts", "../types.js"],
    ["src/scorers/x.ts", "../sandbox/index.js"],
    ["src/eval/x.ts", "../sandbox/index.js"],
    ["src/ui/x.ts", "../api/contract.js"],
    ["src/server/x.ts", "../api/contract.js"],
  ])("%s importing %s is allowed", async (file, specifier) => {
    expect(await lint(file, `import { y } from "${specifier}";\nexport const x = y;\n`)).toEqual(
      [],
    );
  });
});

describe("the API contract (src/api/) is types only", () => {
  const eslint = new ESLint({ cwd: ROOT });
  it.each([
    ["export const x = 1;\n"],
    ['import { formatUsd } from "../core/money.js";\nexport type X = typeof formatUsd;\n'],
  ])("lint refuses run-time code in src/api/: %j", async (code) => {
    const [result] = await eslint.lintText(code, { filePath: join(ROOT, "src/api/x.ts") });
    expect(result!.messages.filter((m) => / types only /.test(m.message))).toHaveLength(1);
  });

  it("bundles to nothing", async () => {
    const { outputFiles } = await build({
      entryPoints: [join(ROOT, "src/api/contract.ts")],
      bundle: true,
      write: false,
      format: "esm",
      absWorkingDir: ROOT,
      logLevel: "silent",
    });
    expect(outputFiles.map((f) => f.text.trim())).toEqual([""]);
  });
});

describe("no import cycles", () => {
  /** The runtime import graph of src/ (static and dynamic imports; types are erased), from esbuild. */
  const graph = async () => {
    const entryPoints = readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.startsWith("ui/"))
      .filter((f) => !f.startsWith("store/contract"))
      .map((f) => join(ROOT, "src", f));
    const { metafile } = await build({
      entryPoints,
      bundle: true,
      write: false,
      metafile: true,
      platform: "node",
      format: "esm",
      outdir: join(ROOT, "dist-graph"),
      packages: "external",
      absWorkingDir: ROOT,
      logLevel: "silent",
    });
    const edges = new Map<string, Set<string>>();
    for (const [file, input] of Object.entries(metafile.inputs)) {
      if (!file.startsWith("src/")) continue;
      const to = new Set(input.imports.map((i) => i.path).filter((p) => p.startsWith("src/")));
      edges.set(file, to);
    }
    return edges;
  };

  it("between the folders of src/", async () => {
    const folder = (file: string) => relative("src", file).split("/")[0]!;
    const folders = new Map<string, Set<string>>();
    for (const [from, tos] of await graph()) {
      if (!from.slice(4).includes("/")) continue; // src/index.ts and other package entries
      for (const to of tos) {
        if (!to.slice(4).includes("/") || folder(from) === folder(to)) continue;
        (folders.get(folder(from)) ?? folders.set(folder(from), new Set()).get(folder(from))!).add(
          folder(to),
        );
      }
    }
    expect([...(folders.get("runs") ?? [])]).toEqual(
      expect.arrayContaining(["engine", "evalport"]),
    );
    expect(findCycle(folders)).toBeUndefined();
  });

  it("every edge of the build's import graph is one the layer table allows", async () => {
    // The table lint is configured from (eslint.config.js), not a copy of it.
    const config = "../eslint.config.js";
    const { LAYERS } = (await import(config)) as { LAYERS: Record<string, string[]> };
    const layerOf = (file: string) => relative("src", file).split("/")[0]!;
    const allowed = (from: string, to: string) => {
      const target = relative("src", to).replace(/\.ts$/, ".js");
      return (LAYERS[layerOf(from)] ?? []).some((t) =>
        t.endsWith(".js") ? target === t : target.startsWith(`${t}/`),
      );
    };
    const broken: string[] = [];
    let checked = 0;
    for (const [from, tos] of await graph()) {
      if (!from.slice(4).includes("/")) continue; // src/index.ts and other package entries
      expect(LAYERS, `${from}'s folder is in the layer table`).toHaveProperty(layerOf(from));
      for (const to of tos) {
        if (!to.slice(4).includes("/") || layerOf(from) === layerOf(to)) continue;
        checked++;
        if (!allowed(from, to)) broken.push(`${from} → ${to}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  it("between the CLI's command modules", async () => {
    const commands = new Map<string, Set<string>>();
    for (const [from, tos] of await graph()) {
      if (!from.startsWith("src/cli/commands/")) continue;
      commands.set(from, new Set([...tos].filter((t) => t.startsWith("src/cli/commands/"))));
    }
    expect(commands.size).toBeGreaterThan(5);
    expect(findCycle(commands)).toBeUndefined();
  });

  it("finds a cycle when there is one (the check itself)", () => {
    const g = new Map([
      ["a", new Set(["b"])],
      ["b", new Set(["c"])],
      ["c", new Set(["a"])],
    ]);
    expect(findCycle(g)).toEqual(["a", "b", "c", "a"]);
    expect(findCycle(new Map([["a", new Set(["b"])]]))).toBeUndefined();
  });
});

/** A cycle of the directed graph as a path that returns to its start, or undefined. */
function findCycle(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === "done") return undefined;
    if (state.get(node) === "open") return [...path.slice(path.indexOf(node)), node];
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, "done");
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}
