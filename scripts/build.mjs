// Builds dist/: JavaScript bundled by esbuild, declarations by tsc.
//
// One build for all public entries (the library, stet/evalport, stet/server, stet/postgres and
// the CLI) with shared chunks: the CLI and an eval file's `import "stet"` load the same modules,
// so there is one StetError class and one registry of everything. Bundling is for start-up
// time: Node's ESM loader pays per file, and zod alone is ~100 files; a run starts ~0.15 s
// sooner bundled.
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { build } from "esbuild";
import { staleDist } from "./stale-dist.mjs";

// `--if-stale` (the package's `prepare`, which npm runs on `npm ci` and, in this checkout, on
// every `npx stet`): nothing to do when dist/ was built from the sources as they are.
if (process.argv.includes("--if-stale") && staleDist(process.cwd()) === undefined) {
  process.exit(0);
}

const require = createRequire(import.meta.url);
const started = Date.now();
rmSync("dist", { recursive: true, force: true });

await build({
  entryPoints: [
    "src/index.ts",
    "src/evalport.ts",
    "src/server/index.ts",
    "src/postgres.ts",
    "src/cli/bin.ts",
    // A parallel export's reader thread (src/cli/parallel-export.ts starts it from dist/cli/).
    "src/cli/export-worker.ts",
  ],
  outbase: "src",
  outdir: "dist",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Prefer a dependency's ESM build, which esbuild can tree-shake.
  mainFields: ["module", "main"],
  // Database drivers (a native addon; pg's optional native binding cannot be bundled), the
  // TypeScript loader and esbuild (which runs its own binary), imported only for .ts eval files.
  external: ["better-sqlite3", "pg", "tsx", "esbuild"],
  // CommonJS dependencies bundled into ESM still call require() for Node's built-ins.
  banner: {
    js: 'import { createRequire as __stetCreateRequire } from "node:module"; const require = __stetCreateRequire(import.meta.url);',
  },
  sourcemap: true,
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
});

// The web UI: a browser bundle that `stet serve` sends as /ui/app.js (src/server/ui-routes.ts).
await build({
  entryPoints: ["src/ui/app.ts"],
  outfile: "dist/ui/app.js",
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  sourcemap: true,
  logLevel: "warning",
});

execFileSync(
  process.execPath,
  [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json", "--emitDeclarationOnly"],
  { stdio: "inherit" },
);

// Last, so only a finished build has one: test/global-setup.ts refuses a dist/ whose sources
// changed after the build that made it started.
writeFileSync("dist/.build-stamp", `${started}\n`);
