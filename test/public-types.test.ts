import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const REPO = join(import.meta.dirname, "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()));

/**
 * A consumer project laid out as `npm i stet` leaves it, offline: `node_modules/stet` holds the
 * package's `package.json` and `dist/` only, and beside it are stet's runtime dependencies and
 * nothing else (no `@types/node`, no `@types/pg`: those are stet's devDependencies).
 * `preserveSymlinks` keeps TypeScript resolving from these paths rather than from the repo's
 * `node_modules`, where the dev types would be found.
 */
function consumer(): string {
  const dir = mkdtempSync(join(tmpdir(), "stet-consumer-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "node_modules/stet"), { recursive: true });
  mkdirSync(join(dir, "no-types"));
  symlinkSync(join(REPO, "package.json"), join(dir, "node_modules/stet/package.json"));
  symlinkSync(join(REPO, "dist"), join(dir, "node_modules/stet/dist"), "dir");
  const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
  };
  for (const name of Object.keys(pkg.dependencies)) {
    mkdirSync(dirname(join(dir, "node_modules", name)), { recursive: true });
    symlinkSync(join(REPO, "node_modules", name), join(dir, "node_modules", name), "dir");
  }
  writeFileSync(
    join(dir, "consumer.ts"),
    [
      'import { defineEval, type Store } from "stet";',
      'import { importResults } from "stet/evalport";',
      'import { openPostgresStore } from "stet/postgres";',
      'import { createApp, serve } from "stet/server";',
      "export const entries = [defineEval, importResults, openPostgresStore, createApp, serve];",
      "export type Used = Store;",
      // Proves the declarations were read as types: were they `any`, this line would not fail.
      "// @ts-expect-error a function is not a number",
      "export const wrong: number = defineEval;",
      "",
    ].join("\n"),
  );
  // What `tsc --init` writes (TypeScript 5.9: `types: []`, the default lib, so DOM is there as
  // hono's own declarations need), with the library check on and no type roots to fall back on.
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: [],
        typeRoots: ["./no-types"],
        preserveSymlinks: true,
      },
      files: ["consumer.ts"],
    }),
  );
  return dir;
}

describe("the package's declarations", () => {
  it("compile in a project without @types/node for every entry (stet, evalport, postgres, server)", () => {
    const dir = consumer();
    const result = spawnSync(process.execPath, [tsc, "-p", dir, "--listFiles"], {
      cwd: dir,
      encoding: "utf8",
    });
    const files = result.stdout.split("\n").filter((line) => line.startsWith("/"));
    const errors = result.stdout.split("\n").filter((line) => line.includes("error TS"));
    expect(errors).toEqual([]);
    expect(result.status).toBe(0);
    // Every entry's declarations (as package.json's exports name them) were read, and nothing
    // of Node's.
    const { exports } = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as {
      exports: Record<string, { types?: string }>;
    };
    const entries = ["stet", "stet/evalport", "stet/postgres", "stet/server"];
    for (const entry of entries) {
      const types = exports[entry.replace(/^stet/, ".")]?.types;
      expect(types, `the types of ${entry}`).toBeDefined();
      expect(files).toContain(join(dir, "node_modules/stet", types!));
    }
    expect(files.filter((file) => file.includes("@types/"))).toEqual([]);
  });
});
