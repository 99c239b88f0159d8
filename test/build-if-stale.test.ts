import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { staleDist } from "../scripts/stale-dist.mjs";

// `npm run prepare` (`scripts/build.mjs --if-stale`) is what npm runs on `npm ci` and, in this
// checkout, on the first `npx stet` (it installs the checkout into its cache). With dist/ built
// from the sources as they are, it must leave dist/ alone: a rebuild deletes dist/ under whatever
// runs it (a run, these tests) and costs a newcomer's first command a second build.
const ROOT = fileURLToPath(new URL("..", import.meta.url));

describe("the package's prepare script", () => {
  it("leaves an up-to-date dist/ as it is", () => {
    // The global setup refused a stale dist/; were it stale now, the script would rebuild it
    // under the other tests, so the test stops instead.
    expect(staleDist(ROOT)).toBeUndefined();
    const stamp = readFileSync(`${ROOT}/dist/.build-stamp`, "utf8");
    const bin = statSync(`${ROOT}/dist/cli/bin.js`).mtimeMs;
    const done = spawnSync(process.execPath, ["scripts/build.mjs", "--if-stale"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect({ status: done.status, stdout: done.stdout, stderr: done.stderr }).toEqual({
      status: 0,
      stdout: "",
      stderr: "",
    });
    expect(readFileSync(`${ROOT}/dist/.build-stamp`, "utf8")).toBe(stamp);
    expect(statSync(`${ROOT}/dist/cli/bin.js`).mtimeMs).toBe(bin);
  });

  it("calls a checkout without a build stale", () => {
    expect(staleDist(`${ROOT}/test/fixtures/no-such-checkout`)).toMatch(
      /^dist\/ has no build stamp/,
    );
  });
});
