import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const PRELOAD = fileURLToPath(new URL("./record-loads.mjs", import.meta.url));

/**
 * Records which modules a CLI child loads: pass `env` to `runCli`, then `modules()` lists them.
 * A bundled chunk of dist/ stands for the files it was built from (read from its source map), so
 * the list names `src/engine/execute-run.ts` or `node_modules/hono/…`, not `chunk-X2Y.js`.
 */
export function recordLoads(): {
  env: NodeJS.ProcessEnv;
  modules: () => string[];
  cleanup: () => void;
} {
  const dir = mkdtempSync(join(tmpdir(), "stet-loads-"));
  const log = join(dir, "loads.log");
  return {
    env: { NODE_OPTIONS: `--import ${PRELOAD}`, STET_TEST_LOAD_LOG: log },
    modules: () => loadedModules(log),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function loadedModules(log: string): string[] {
  const urls = existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : [];
  const modules = new Set<string>();
  for (const url of urls) {
    if (!url.startsWith("file:")) {
      modules.add(url);
      continue;
    }
    for (const file of sourcesOf(fileURLToPath(url))) modules.add(file);
  }
  return [...modules].sort();
}

/** A file's path relative to the repo (absolute outside it); a dist/ chunk's are its sources. */
function sourcesOf(file: string): string[] {
  const map = `${file}.map`;
  if (!file.startsWith(join(REPO, "dist")) || !existsSync(map)) return [display(file)];
  const { sources } = JSON.parse(readFileSync(map, "utf8")) as { sources: string[] };
  return sources.map((source) => display(resolve(dirname(file), source)));
}

function display(file: string): string {
  const inRepo = relative(REPO, file);
  return inRepo.startsWith("..") ? file : inRepo;
}
