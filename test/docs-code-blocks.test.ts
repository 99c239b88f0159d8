import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  checkBlocks,
  describeDiagnostic,
  manualPages,
  pageBlocks,
  tsBlocks,
} from "./helpers/doc-blocks.js";

const REPO = fileURLToPath(new URL("..", import.meta.url));

describe("the manual's TypeScript examples", () => {
  it("type-check against the package's own types, every ts block of README.md and docs/", () => {
    const blocks = manualPages(REPO).flatMap((page) => pageBlocks(REPO, page));
    const checked = blocks.filter((block) => !block.fragment);
    // The manual has examples, and fragments stay few: most examples are complete programs.
    expect(checked.length).toBeGreaterThan(10);
    expect(blocks.length - checked.length).toBeLessThanOrEqual(3);
    const problems = checkBlocks(REPO, checked).map(describeDiagnostic);
    expect(problems).toEqual([]);
  });

  it("reports a broken block with its page, line and message (a misspelled option)", () => {
    const page = [
      "# A page",
      "",
      "```ts",
      'import { defineEval, scorers, solvers } from "stet";',
      "",
      "export default defineEval({",
      '  name: "broken",',
      '  dataset: "./qa.jsonl",',
      '  solver: solvers.chat({ modle: "gpt-4o-mini" }),',
      "  scorers: [scorers.exact()],",
      "});",
      "```",
      "",
      "```ts fragment",
      "solver: this is not a program,",
      "```",
    ].join("\n");
    const blocks = tsBlocks("docs/broken.md", page);
    expect(blocks.map((b) => [b.line, b.fragment])).toEqual([
      [3, false],
      [14, true],
    ]);
    const problems = checkBlocks(REPO, [blocks[0]!]).map(describeDiagnostic);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^docs\/broken\.md:9 \(the ts block at line 3, .*\): TS2561: .*'modle'/,
    );
  });

  it("skips a block marked as a fragment by an HTML comment above it", () => {
    const page = ["<!-- fragment -->", "", "```ts", "solver: async () => 1,", "```"].join("\n");
    expect(tsBlocks("docs/x.md", page)).toMatchObject([{ line: 3, fragment: true }]);
  });
});
