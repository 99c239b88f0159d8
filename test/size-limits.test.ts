import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");
const MAX_FILE_LINES = 450;
const MAX_FUNCTION_LINES = 150;

type Oversize = { file: string; what: string; lines: number; limit: number };

/**
 * What in one module is over its limit: the module itself, and every function (declaration,
 * expression, arrow, method, constructor, accessor), measured from its first line to its last.
 */
function oversized(file: string, text: string): Oversize[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Oversize[] = [];
  const fileLines = source.getLineStarts().length - (text.endsWith("\n") ? 1 : 0);
  if (fileLines > MAX_FILE_LINES) {
    found.push({ file, what: "the file", lines: fileLines, limit: MAX_FILE_LINES });
  }
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const visit = (node: ts.Node): void => {
    if (isFunction(node)) {
      const start = lineOf(node.getStart(source));
      const lines = lineOf(node.getEnd()) - start + 1;
      if (lines > MAX_FUNCTION_LINES) {
        found.push({
          file,
          what: `${functionName(node)} (line ${start + 1})`,
          lines,
          limit: MAX_FUNCTION_LINES,
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

/** The name a reader would look for: the function's own, else what it is assigned to or passed as. */
function functionName(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (
    ts.isVariableDeclaration(parent) ||
    ts.isPropertyAssignment(parent) ||
    ts.isPropertyDeclaration(parent)
  ) {
    return parent.name.getText();
  }
  if (ts.isCallExpression(parent))
    return `a callback of ${parent.expression.getText().slice(0, 60)}`;
  return "an anonymous function";
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

const describeOversize = ({ file, what, lines, limit }: Oversize) =>
  `${file}: ${what} is ${lines} lines (limit ${limit})`;

describe("size limits of src/", () => {
  it(`no file over ${MAX_FILE_LINES} lines and no function over ${MAX_FUNCTION_LINES}`, () => {
    const found = sourceFiles(join(ROOT, "src"))
      .map((path) => relative(ROOT, path).split("\\").join("/"))
      .flatMap((file) => oversized(file, readFileSync(join(ROOT, file), "utf8")));
    expect(found.map(describeOversize)).toEqual([]);
  });

  it("flags an over-long file and every kind of over-long function, by name and length", () => {
    const body = (n: number) =>
      Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const text = [
      `export function declared() {\n${body(149)}\n}`, // 151 lines: over
      `export function fits() {\n${body(148)}\n}`, // 150 lines: at the limit
      `export const arrow = () => {\n${body(160)}\n};`,
      `export const expression = function () {\n${body(160)}\n};`,
      `export class Holder {\n  method() {\n${body(160)}\n  }\n}`,
      "",
    ].join("\n");
    expect(oversized("src/x/synthetic.ts", text).map(describeOversize)).toEqual([
      "src/x/synthetic.ts: the file is 789 lines (limit 450)",
      "src/x/synthetic.ts: declared (line 1) is 151 lines (limit 150)",
      "src/x/synthetic.ts: arrow (line 302) is 162 lines (limit 150)",
      "src/x/synthetic.ts: expression (line 464) is 162 lines (limit 150)",
      "src/x/synthetic.ts: method (line 627) is 162 lines (limit 150)",
    ]);
  });
});
