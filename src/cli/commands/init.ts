import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { StetError } from "../../core/errors.js";
import { INIT_FILES, INIT_SCRIPT } from "../init-templates.js";
import { createIo } from "../io.js";

export interface InitFlags {
  /** Write this bundled example (`examples/<name>/`) instead of the default scaffold. */
  example?: string;
  /** Overwrite files that exist already. */
  force?: boolean;
  json?: boolean;
}

/**
 * `stet init [dir]`: scaffold a working eval in a project (default: the current directory), or,
 * with `--example <name>`, write one of the examples that ship with stet into `examples/<name>/`.
 * Nothing is written when any file it would write exists already (unless `--force`): the command
 * names them and exits 2. The scaffold also adds an `eval` script to package.json (creating a
 * package.json when there is none) and prints the command that runs it.
 */
export async function initCommand(dir: string | undefined, flags: InitFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  const root = resolve(dir ?? ".");
  if (existsSync(root) && !statSync(root).isDirectory())
    throw new StetError("E_USAGE", `${root} is not a directory`);
  const files = flags.example === undefined ? INIT_FILES : exampleFiles(flags.example);
  const clashes = Object.keys(files).filter((name) => existsSync(join(root, name)));
  if (clashes.length > 0 && !flags.force)
    throw new StetError(
      "E_USAGE",
      `not overwriting ${clashes.map((name) => join(root, name)).join(", ")}: ` +
        "remove them, run in another directory, or pass --force",
    );
  const manifest = flags.example === undefined ? packageWithScript(root) : undefined;
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, name)), { recursive: true });
    await writeFile(join(root, name), text);
  }
  if (manifest) await writeFile(join(root, "package.json"), manifest.text);
  const written = [...Object.keys(files), ...(manifest?.changed ? ["package.json"] : [])];
  const command =
    flags.example === undefined
      ? manifest?.script === undefined
        ? "npx stet run evals/qa.ts"
        : `npm run ${manifest.script}`
      : `npx stet run ${exampleEntry(flags.example, files)}`;
  if (flags.json) {
    io.stdout.write(`${JSON.stringify({ dir: root, written, command }, null, 2)}\n`);
    return 0;
  }
  io.say(`wrote ${written.map((name) => relative(".", join(root, name)) || name).join(", ")}`);
  if (flags.example === undefined || /chat|agent/.test(flags.example))
    io.say(
      "set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server: vLLM, Ollama, llama.cpp, OpenRouter), then run:",
    );
  else io.say("run it (no API key needed):");
  io.say(`  ${root === resolve(".") ? "" : `cd ${relative(".", root)} && `}${command}`);
  return 0;
}

interface Manifest {
  text: string;
  /** Whether package.json is new or gained the script. */
  changed: boolean;
  /** The script's name, or undefined when every candidate name is taken by another command. */
  script: string | undefined;
}

/**
 * package.json with the eval script added: `eval`, or `stet:qa` when `eval` runs something else.
 * A package.json that is not a JSON object is refused (nothing written) rather than rewritten.
 */
function packageWithScript(root: string): Manifest {
  const path = join(root, "package.json");
  if (!existsSync(path)) {
    const name =
      basename(root)
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, "-") || "evals";
    const pkg = {
      name,
      private: true,
      type: "module",
      scripts: { [INIT_SCRIPT.name]: INIT_SCRIPT.command },
    };
    return { text: `${JSON.stringify(pkg, null, 2)}\n`, changed: true, script: INIT_SCRIPT.name };
  }
  const text = readFileSync(path, "utf8");
  let pkg: unknown;
  try {
    pkg = JSON.parse(text);
  } catch (cause) {
    throw new StetError("E_USAGE", `${path} is not valid JSON: ${(cause as Error).message}`);
  }
  if (typeof pkg !== "object" || pkg === null || Array.isArray(pkg))
    throw new StetError("E_USAGE", `${path} is not a JSON object`);
  const manifest = pkg as { scripts?: Record<string, unknown> };
  const scripts = manifest.scripts ?? {};
  if (typeof scripts !== "object" || scripts === null || Array.isArray(scripts))
    throw new StetError("E_USAGE", `${path}: "scripts" is not an object`);
  for (const name of [INIT_SCRIPT.name, "stet:qa"]) {
    if (scripts[name] === INIT_SCRIPT.command) return { text, changed: false, script: name };
    if (scripts[name] === undefined) {
      manifest.scripts = { ...scripts, [name]: INIT_SCRIPT.command };
      const indent = /^[ \t]+/m.exec(text)?.[0] ?? "  ";
      return { text: `${JSON.stringify(pkg, null, indent)}\n`, changed: true, script: name };
    }
  }
  return { text, changed: false, script: undefined };
}

/** The files of a bundled example, by path relative to the project (`examples/<name>/…`). */
function exampleFiles(name: string): Record<string, string> {
  const examples = join(packageRoot(), "examples");
  const available = readdirSync(examples).filter((entry) =>
    statSync(join(examples, entry)).isDirectory(),
  );
  if (!available.includes(name))
    throw new StetError(
      "E_USAGE",
      `no example named "${name}": the examples are ${available.sort().join(", ")}`,
    );
  const files: Record<string, string> = {};
  const walk = (from: string) => {
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      const path = join(from, entry.name);
      if (entry.isDirectory()) walk(path);
      else files[relative(dirname(examples), path)] = readFileSync(path, "utf8");
    }
  };
  walk(join(examples, name));
  return files;
}

function exampleEntry(name: string, files: Record<string, string>): string {
  const entry = Object.keys(files).find((path) => /\/eval\.(ts|mjs|js)$/.test(path));
  return entry ?? join("examples", name);
}

/** The installed stet package's folder: the nearest package.json named "stet" above this module. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      const { name } = JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown };
      if (name === "stet") return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new StetError("E_CONFIG", "cannot find the stet package's folder");
    dir = parent;
  }
}
