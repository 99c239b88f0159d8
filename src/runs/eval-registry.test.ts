import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { evalProject } from "../../test/helpers/eval-project.js";
import { loadEvalRegistry } from "./eval-registry.js";

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

describe("loadEvalRegistry", () => {
  it("registers the evals of a directory by name and never runs a script that is not one", async () => {
    const project = evalProject({
      "math.mjs": `import { defineEval } from "stet";
export default defineEval({ name: "math", dataset: [{ id: "a", input: "1" }], solver: (s) => s.input, scorers: [function same() { return 1; }] });`,
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
});
