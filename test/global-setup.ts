import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Vitest's global setup: refuses to test against a dist/ older than its sources. The CLI tests
 * spawn bin/stet.js, which runs dist/, so after an edit under src/ they would test the previous
 * build and pass or fail for the wrong code. `npm test` builds first; a bare `vitest run` after
 * an edit fails here, naming the edited files, until `npm run build` is run. (Failing is
 * preferred to building here: a build takes several seconds, and `npm test` builds anyway.)
 */
const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Written last by scripts/build.mjs: the time (ms since the epoch) that build started. */
const STAMP = join(ROOT, "dist/.build-stamp");

export default function setup(): void {
  const problem = staleDist();
  if (problem) throw new Error(`${problem}\nRun \`npm run build\` (npm test builds by itself).`);
}

/** Why dist/ may not match the sources, or undefined when it was built after every one changed. */
function staleDist(): string | undefined {
  if (!existsSync(STAMP)) {
    return "dist/ has no build stamp (dist/.build-stamp): it is missing, or was not built by scripts/build.mjs, or its build failed.";
  }
  const builtAt = Number(readFileSync(STAMP, "utf8").trim());
  if (!Number.isFinite(builtAt)) return `dist/.build-stamp holds no build time.`;
  const newer = buildInputs()
    .map((path) => ({ path, mtimeMs: statSync(path).mtimeMs }))
    .filter((f) => f.mtimeMs > builtAt)
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  if (newer.length === 0) return undefined;
  const shown = newer.slice(0, 5).map((f) => `  ${relative(ROOT, f.path)}`);
  if (newer.length > shown.length) shown.push(`  … and ${newer.length - shown.length} more`);
  return [
    `dist/ is older than ${newer.length} of its sources, changed since the last build started ` +
      `(${new Date(builtAt).toISOString()}); the tests that spawn bin/stet.js would run the old build:`,
    ...shown,
  ].join("\n");
}

/**
 * What the build reads: src/ (the bundles, the web UI among them, and the declarations) except
 * tests and the store contract suite, which only tests import; and the build script itself.
 */
function buildInputs(): string[] {
  const src = join(ROOT, "src");
  const contract = join(src, "store/contract");
  const files: string[] = [join(ROOT, "scripts/build.mjs")];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (path !== contract) walk(path);
      } else if (!entry.name.endsWith(".test.ts") && path !== `${contract}.ts`) {
        files.push(path);
      }
    }
  };
  walk(src);
  return files;
}
