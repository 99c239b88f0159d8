import { fileURLToPath } from "node:url";
import { staleDist } from "../scripts/stale-dist.mjs";

/**
 * Vitest's global setup: refuses to test against a dist/ older than its sources. The CLI tests
 * spawn bin/stet.js, which runs dist/, so after an edit under src/ they would test the previous
 * build and pass or fail for the wrong code. `npm test` builds first; a bare `vitest run` after
 * an edit fails here, naming the edited files, until `npm run build` is run. (Failing is
 * preferred to building here: a build takes several seconds, and `npm test` builds anyway.)
 */
const ROOT = fileURLToPath(new URL("..", import.meta.url));

export default function setup(): void {
  const problem = staleDist(ROOT);
  if (problem) throw new Error(`${problem}\nRun \`npm run build\` (npm test builds by itself).`);
}
