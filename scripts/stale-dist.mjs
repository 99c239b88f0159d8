// Whether dist/ was built from the sources as they are: what `npm test`'s global setup refuses to
// test against, and what lets `npm run prepare` (which `npx stet` runs in this checkout) skip a
// build that would make the same files.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * Why `root`'s dist/ may not match its sources, or undefined when it was built (by
 * scripts/build.mjs, whose last step writes dist/.build-stamp with the time it started) after
 * every source changed.
 *
 * @example if (staleDist(process.cwd()) === undefined) console.log("dist/ is up to date");
 */
export function staleDist(root) {
  const stamp = join(root, "dist/.build-stamp");
  if (!existsSync(stamp)) {
    return "dist/ has no build stamp (dist/.build-stamp): it is missing, or was not built by scripts/build.mjs, or its build failed.";
  }
  const builtAt = Number(readFileSync(stamp, "utf8").trim());
  if (!Number.isFinite(builtAt)) return `dist/.build-stamp holds no build time.`;
  const newer = buildInputs(root)
    .map((path) => ({ path, mtimeMs: statSync(path).mtimeMs }))
    .filter((f) => f.mtimeMs > builtAt)
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  if (newer.length === 0) return undefined;
  const shown = newer.slice(0, 5).map((f) => `  ${relative(root, f.path)}`);
  if (newer.length > shown.length) shown.push(`  … and ${newer.length - shown.length} more`);
  return [
    `dist/ is older than ${newer.length} of its sources, changed since the last build started ` +
      `(${new Date(builtAt).toISOString()}); the tests that spawn bin/stet.js would run the old build:`,
    ...shown,
  ].join("\n");
}

/**
 * What the build reads: src/ (the bundles, the web UI among them, and the declarations) except
 * tests and the store contract suite, which only tests import; the build script, this file and
 * the package's manifest and lock file (a dependency bundled into dist/ may have changed).
 */
function buildInputs(root) {
  const src = join(root, "src");
  const contract = join(src, "store/contract");
  const files = ["scripts/build.mjs", "scripts/stale-dist.mjs", "package.json", "package-lock.json"]
    .map((file) => join(root, file))
    .filter((path) => existsSync(path));
  const walk = (dir) => {
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
