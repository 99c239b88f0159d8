import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { localModules } from "./local-modules.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "stet-modules-"));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

describe("localModules", () => {
  it("lists the local modules an eval imports, directly or not, by relative path, packages aside", () => {
    const dir = project({
      "eval.ts": `import { f } from "./lib/a.ts"; import "stet"; export default f;`,
      "lib/a.ts": `export { g as f } from "./b.mjs";`,
      "lib/b.mjs": `export const g = 1;`,
    });
    const before = localModules(join(dir, "eval.ts"));
    expect(Object.keys(before ?? {})).toEqual(["lib/a.ts", "lib/b.mjs"]);
    writeFileSync(join(dir, "lib/b.mjs"), `export const g = 2;`);
    const after = localModules(join(dir, "eval.ts"));
    expect(after?.["lib/b.mjs"]).not.toBe(before?.["lib/b.mjs"]);
    expect(after?.["lib/a.ts"]).toBe(before?.["lib/a.ts"]);
  });

  it("follows extensionless and .js specifiers of TypeScript, and index files", () => {
    const dir = project({
      "eval.mjs": `import { f } from "./lib/a.js";\nconst g = await import("./util");`,
      "lib/a.ts": `export * from "./b";`,
      "lib/b.tsx": `export const f = 1;`,
      "util/index.js": `export default 1;`,
    });
    expect(Object.keys(localModules(join(dir, "eval.mjs")) ?? {})).toEqual([
      "lib/a.ts",
      "lib/b.tsx",
      "util/index.js",
    ]);
  });

  it("is undefined for a file that is not a module; an import that does not resolve is left out", () => {
    const dir = project({ "suite.json": "{}", "eval.ts": `import "./missing.ts";` });
    expect(localModules(join(dir, "suite.json"))).toBeUndefined();
    expect(localModules(join(dir, "eval.ts"))).toEqual({});
  });
});
