import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { manualPages } from "./helpers/doc-blocks.js";
import { anchors, brokenLinks } from "./helpers/doc-links.js";
import { tempDir } from "./helpers/temp-store.js";

const REPO = fileURLToPath(new URL("..", import.meta.url));

describe("the manual's links", () => {
  it("every relative link and anchor of README.md, docs/ and bench/README.md resolves", () => {
    const pages = manualPages(REPO);
    expect(pages.length).toBeGreaterThan(10);
    const broken = pages.flatMap((page) => brokenLinks(REPO, page));
    expect(broken.map((b) => `${b.page}:${b.line}: ${b.target}: ${b.reason}`)).toEqual([]);
  });

  it("the README links to every page of docs/", () => {
    const readme = join(REPO, "README.md");
    const pages = manualPages(REPO).filter((page) => page.includes("/docs/"));
    const source = readFileSync(readme, "utf8");
    for (const page of pages) {
      expect(source, page).toContain(`](docs/${page.split("/docs/")[1]})`);
    }
  });

  it("reports a missing file, a missing anchor and a missing anchor in another page", () => {
    const tmp = tempDir();
    try {
      mkdirSync(join(tmp.dir, "docs"));
      writeFileSync(join(tmp.dir, "docs/a.md"), "# A\n\n## `stet run` (and more)\n");
      const page = join(tmp.dir, "README.md");
      writeFileSync(
        page,
        [
          "# Top",
          "",
          "[fine](docs/a.md#stet-run-and-more) [self](#top) [web](https://example.com/x.md)",
          "[gone](docs/gone.md) and `[code](nowhere.md)`",
          "[anchor](#nowhere) [other](docs/a.md#stet-runs)",
          "",
          "```md",
          "[in a block](nowhere.md)",
          "```",
        ].join("\n"),
      );
      expect(brokenLinks(tmp.dir, page)).toEqual([
        { page: "README.md", line: 4, target: "docs/gone.md", reason: "no file docs/gone.md" },
        {
          page: "README.md",
          line: 5,
          target: "#nowhere",
          reason: "no heading #nowhere in README.md",
        },
        {
          page: "README.md",
          line: 5,
          target: "docs/a.md#stet-runs",
          reason: "no heading #stet-runs in docs/a.md",
        },
      ]);
    } finally {
      tmp.cleanup();
    }
  });

  it("slugs headings as GitHub does", () => {
    const text = "# One run, many workers (`--distributed`)\n## Exit codes\n## Exit codes\n";
    expect([...anchors(text)]).toEqual([
      "one-run-many-workers---distributed",
      "exit-codes",
      "exit-codes-1",
    ]);
  });
});
