// Lists the platform builds of package-lock.json's optional dependencies meant for this machine (os, cpu, libc)
// that are not installed, and exits 1 when there is one. npm drops an optional dependency whose
// download failed (an ECONNRESET, npm/cli#4828) without failing the install: the platform's
// native build of rolldown or esbuild is then missing, and the build or the tests fail to start.
// .ci/run installs again when this says so.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
const glibc = process.report?.getReport().header.glibcVersionRuntime !== undefined;
const libc = process.platform === "linux" ? (glibc ? "glibc" : "musl") : undefined;

/** Whether a lockfile field (`os`, `cpu`, `libc`: a list, `!` negating) admits `value`. */
const admits = (list, value) =>
  list === undefined ||
  value === undefined ||
  (list.includes(value) && !list.includes(`!${value}`)) ||
  (list.every((v) => v.startsWith("!")) && !list.includes(`!${value}`));

const missing = Object.entries(lock.packages).filter(
  ([path, entry]) =>
    path !== "" &&
    entry.optional &&
    // A platform's own build (what npm picks by os and cpu); other optional packages serve
    // builds for other platforms (wasm32) and are rightly left out.
    (entry.os !== undefined || entry.cpu !== undefined) &&
    admits(entry.os, process.platform) &&
    admits(entry.cpu, process.arch) &&
    admits(entry.libc, libc) &&
    !existsSync(join(root, path, "package.json")),
);
for (const [path] of missing) console.error(`missing optional dependency: ${path}`);
process.exit(missing.length === 0 ? 0 : 1);
