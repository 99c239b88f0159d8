import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// The API's JSON is declared once (src/api/contract.ts) and both sides are typed against it: a
// field renamed in the contract alone breaks the server's build and the UI's. Checked with the
// TypeScript compiler over the real projects, the contract's text renamed in memory only.
const ROOT = join(import.meta.dirname, "..");
const CONTRACT = join(ROOT, "src/api/contract.ts");

/** The files with type errors when the contract reads `contract`, for one tsconfig's project. */
function filesWithErrors(tsconfig: string, roots: string[], contract: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, tsconfig),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  )!;
  const host = ts.createCompilerHost(parsed.options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (file, language, onError, create) =>
    file === CONTRACT
      ? ts.createSourceFile(file, contract, language)
      : getSourceFile(file, language, onError, create);
  const program = ts.createProgram(
    roots.map((r) => join(ROOT, r)),
    { ...parsed.options, noEmit: true },
    host,
  );
  const files = ts
    .getPreEmitDiagnostics(program)
    .map((d) => (d.file ? relative(ROOT, d.file.fileName) : "(global)"));
  return [...new Set(files)].sort();
}

const SERVER = ["src/server/run-view.ts", "src/server/routes/diff.ts"];
const UI = ["src/ui/runs-view.ts", "src/ui/run-diff.ts"];

describe("one API contract for the server and the UI", () => {
  const original = readFileSync(CONTRACT, "utf8");
  // Two fields the server sends and the UI reads: a run's key counts, a diff's samples only in A.
  const renamed = original
    .replace(/^ {2}counts: CountsView;$/m, "  keyCounts: CountsView;")
    .replace(/^ {2}onlyInA: string\[\];$/m, "  onlyA: string[];");

  it("renames two fields for the check (the check itself)", () => {
    expect(renamed).not.toBe(original);
    expect(renamed).toContain("keyCounts: CountsView;");
    expect(renamed).toContain("onlyA: string[];");
  });

  it("builds as it is, server and UI", () => {
    expect(filesWithErrors("tsconfig.json", SERVER, original)).toEqual([]);
    expect(filesWithErrors("src/ui/tsconfig.json", UI, original)).toEqual([]);
  }, 120_000);

  it("a field renamed in the contract alone breaks the server's build and the UI's", () => {
    expect(filesWithErrors("tsconfig.json", SERVER, renamed)).toEqual([...SERVER].sort());
    expect(filesWithErrors("src/ui/tsconfig.json", UI, renamed)).toEqual([...UI].sort());
  }, 120_000);
});
