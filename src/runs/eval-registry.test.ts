import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { evalProject } from "../../test/helpers/eval-project.js";
import { loadEvalRegistry, skippedLine } from "./eval-registry.js";

const MATH = `import { defineEval } from "stet";
export default defineEval({ name: "math", dataset: [{ id: "a", input: "1" }], solver: (s) => s.input, scorers: [function same() { return 1; }] });`;

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

describe("loadEvalRegistry", () => {
  it("registers the evals of a directory by name and never runs a script that is not one", async () => {
    const project = evalProject({
      "math.mjs": MATH,
      "broken.mjs": `export default { name: 42 };`,
      "program.mjs": `import { writeFileSync } from "node:fs";
writeFileSync(new URL("./ran.txt", import.meta.url), "I ran");`,
      "notes.txt": "not an eval",
    });
    cleanups.push(project.cleanup);
    const registry = await loadEvalRegistry(project.dir);
    expect(registry.list()).toEqual([{ name: "math", path: join(project.dir, "math.mjs") }]);
    expect(registry.problems.map((p) => p.file)).toEqual([join(project.dir, "broken.mjs")]);
    expect(existsSync(join(project.dir, "ran.txt"))).toBe(false);
  });

  it("leaves JSON files that are no EvalPort suite alone and finds an eval by its file", async () => {
    const project = evalProject({
      "math.mjs": MATH,
      "package.json": `{ "name": "evals", "type": "module" }`,
      "tsconfig.json": `{ // comments: not JSON\n "compilerOptions": {} }`,
      "suite.json": `{ "version": "1.0.0", "id": "broken" }`,
    });
    cleanups.push(project.cleanup);
    const registry = await loadEvalRegistry(project.dir);
    expect(registry.skipped).toEqual(
      ["package.json", "suite.json", "tsconfig.json"].map((f) => join(project.dir, f)),
    );
    expect(registry.problems).toEqual([]);
    expect(skippedLine(registry.skipped)).toBe(
      "not EvalPort suites, ignored: package.json, suite.json, tsconfig.json",
    );
    expect(registry.fromFile(join(project.dir, ".", "math.mjs"))?.eval.name).toBe("math");
    expect(registry.fromFile(join(project.dir, "package.json"))).toBeUndefined();
  });

  it("refuses two evals of one name, naming both files", async () => {
    const project = evalProject({ "a.mjs": MATH, "b.mjs": MATH });
    cleanups.push(project.cleanup);
    await expect(loadEvalRegistry(project.dir)).rejects.toMatchObject({
      code: "E_CONFIG",
      message: expect.stringContaining(
        `"math": ${join(project.dir, "a.mjs")}, ${join(project.dir, "b.mjs")}`,
      ) as unknown,
    });
  });
});
