import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

/** The Markdown files that make up the manual: README.md, docs/*.md and bench/README.md. */
export function manualPages(repo: string): string[] {
  const docs = readdirSync(join(repo, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => join(repo, "docs", name));
  return [join(repo, "README.md"), ...docs, join(repo, "bench/README.md")];
}

/** A fenced ```ts block of a Markdown page: where it starts and its code. */
export interface DocBlock {
  /** The page, relative to the repository. */
  page: string;
  /** The 1-based line of the block's opening fence. */
  line: number;
  code: string;
  /** Marked ```ts fragment (or preceded by `<!-- fragment -->`): not a program of its own. */
  fragment: boolean;
}

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;
const FRAGMENT = /^\s*<!--\s*fragment\s*-->\s*$/;

/** The nearest non-blank line above line `i`, or "". */
function previousLine(lines: string[], i: number): string {
  for (let j = i - 1; j >= 0; j--) if (lines[j]!.trim() !== "") return lines[j]!;
  return "";
}

/** Every fenced block whose language is ts or typescript, in page order. */
export function tsBlocks(page: string, text: string): DocBlock[] {
  const lines = text.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info] = open as unknown as [string, string, string, string];
    const end = lines.findIndex(
      (line, j) => j > i && line.trimStart().startsWith(fence) && line.trim() === fence.trim(),
    );
    const close = end === -1 ? lines.length : end;
    const words = info.trim().split(/\s+/);
    if (words[0] === "ts" || words[0] === "typescript") {
      const code = lines
        .slice(i + 1, close)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
        .join("\n");
      const marked = FRAGMENT.test(previousLine(lines, i));
      blocks.push({ page, line: i + 1, code, fragment: words.includes("fragment") || marked });
    }
    i = close;
  }
  return blocks;
}

/** A compiler diagnostic, placed in the page: `docs/x.md:12 (block at line 9): TS2345 …`. */
export interface BlockDiagnostic {
  block: DocBlock;
  /** The line in the page the diagnostic points at. */
  pageLine: number;
  message: string;
}

/**
 * Type-checks blocks as modules against the package's own sources: `stet`, `stet/evalport`,
 * `stet/server` and `stet/postgres` resolve to src/ through `paths`, with the repository's
 * compiler options. One program for every block; each is written to a temporary folder in
 * node_modules/.cache (so Node's types and the dependencies resolve as in the repository),
 * removed afterwards.
 */
export function checkBlocks(repo: string, blocks: DocBlock[]): BlockDiagnostic[] {
  const cache = join(repo, "node_modules/.cache");
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, "stet-doc-blocks-"));
  try {
    const files = blocks.map((block, index) => {
      const file = join(dir, `block-${index}.ts`);
      // `export {}` keeps a block without imports a module: blocks never share a scope.
      writeFileSync(file, `${block.code}\nexport {};\n`);
      return file;
    });
    const config = ts.readConfigFile(join(repo, "tsconfig.json"), (path) => ts.sys.readFile(path));
    const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, repo);
    const src = (path: string) => [join(repo, "src", path)];
    const options: ts.CompilerOptions = {
      ...parsed.options,
      noEmit: true,
      declaration: false,
      sourceMap: false,
      rootDir: repo,
      baseUrl: repo,
      paths: {
        stet: src("index.ts"),
        "stet/evalport": src("evalport.ts"),
        "stet/postgres": src("postgres.ts"),
        "stet/server": src("server/index.ts"),
      },
    };
    const program = ts.createProgram(files, options);
    const diagnostics = files.flatMap((file, index) => {
      const source = program.getSourceFile(file)!;
      return [
        ...program.getSyntacticDiagnostics(source),
        ...program.getSemanticDiagnostics(source),
      ].map((d) => placed(d, blocks[index]!));
    });
    const global = [...program.getGlobalDiagnostics(), ...program.getOptionsDiagnostics()];
    if (global.length > 0) {
      throw new Error(ts.formatDiagnostics(global, host(repo)));
    }
    return diagnostics;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function placed(diagnostic: ts.Diagnostic, block: DocBlock): BlockDiagnostic {
  const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
  const line =
    diagnostic.file && diagnostic.start !== undefined
      ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line
      : 0;
  return { block, pageLine: block.line + 1 + line, message: `TS${diagnostic.code}: ${text}` };
}

function host(repo: string): ts.FormatDiagnosticsHost {
  return {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: () => repo,
    getNewLine: () => "\n",
  };
}

/** A diagnostic as the test reports it: the page, the line, the block and the message. */
export function describeDiagnostic(d: BlockDiagnostic): string {
  const first = d.block.code.split("\n").find((line) => line.trim() !== "") ?? "";
  return `${d.block.page}:${d.pageLine} (the ts block at line ${d.block.line}, "${first.trim()}"): ${d.message}`;
}

/** Reads a page and returns its ts blocks, named relative to the repository. */
export function pageBlocks(repo: string, path: string): DocBlock[] {
  return tsBlocks(relative(repo, path), readFileSync(path, "utf8"));
}
