import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

/** core/ is pure: no Node-specific imports. */
const nodeBuiltins = { group: ["node:*"], message: "core/ is pure: no Node-specific imports." };
/** Database drivers belong to their store adapters: everything else sees the Store port. */
const drivers = ["better-sqlite3", "pg"].map((name) => ({
  name,
  message: "Only store/ adapters import a database driver; use the Store port.",
}));
/** zod's named `z` export holds all of zod; the namespace import lets the bundle keep what is used. */
const zodNamespace = {
  selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier[imported.name='z']",
  message: 'Write `import * as z from "zod"`: the named `z` pulls all of zod into dist/.',
};

/** api/ declares the API's JSON: types only, so nothing of it reaches a bundle at run time. */
const typesOnly = {
  selector:
    "Program > :not(ImportDeclaration[importKind='type'], ExportNamedDeclaration[exportKind='type'], ExportAllDeclaration[exportKind='type'], TSInterfaceDeclaration, TSTypeAliasDeclaration)",
  message: "api/ is the API's JSON contract: types only (`import type`, interfaces, type aliases).",
};

/**
 * The dependency rule (docs/ARCHITECTURE.md): the folders of src/ each folder's modules may
 * import. `store/types.js` is the Store port; `server/index.js` the server's public surface.
 * Tests are exempt: they wire real parts together.
 */
export const LAYERS = {
  core: [],
  // The API's JSON contract, declared once for the server and the UI: types only, of core's.
  api: ["core"],
  // Durable files (atomic writes, directory fsyncs): Node's file system and nothing of ours.
  durable: [],
  store: ["core", "durable"],
  solvers: ["core"],
  sandbox: ["core"],
  scorers: ["core", "solvers", "sandbox"],
  dataset: ["core"],
  eval: ["core", "dataset", "scorers", "solvers", "sandbox"],
  engine: ["core", "durable", "store/types.js"],
  evalport: ["core", "durable", "eval", "scorers", "solvers", "sandbox", "store/types.js"],
  runs: ["core", "durable", "engine", "evalport", "eval", "store/types.js"],
  server: ["core", "api", "runs", "evalport", "store/types.js"],
  // The composition root: it picks a concrete store and starts the server.
  cli: ["core", "durable", "runs", "evalport", "store", "server/index.js"],
  // The UI bundle shares the score chart with the HTML export and the dollars' format with the
  // CLI, and nothing else of core/; it reads the API's JSON as api/ declares it.
  ui: ["api", "core/score-chart.js", "core/money.js"],
};

/** How deep a module may sit under its layer's folder and still be checked: any real depth. */
const MAX_DEPTH = 8;

/**
 * One config per folder and nesting depth: an import that climbs out of the folder (`../` once
 * per level, plus one) must land in an allowed folder or module, whether static (`import … from`,
 * `export … from`) or dynamic (`import("…")`, by `no-restricted-syntax`). Every folder but store/
 * is also kept from the database drivers, and core/ from Node's built-ins.
 */
function layerRules() {
  return Object.entries(LAYERS).flatMap(([layer, allowed]) => {
    const targets = allowed.map((t) => (t.endsWith(".js") ? `${t.replace(".", "\\.")}$` : `${t}/`));
    const message =
      allowed.length === 0
        ? `${layer}/ imports nothing of ours outside ${layer}/.`
        : `${layer}/ may import only ${allowed.join(", ")} (docs/ARCHITECTURE.md).`;
    return Array.from({ length: MAX_DEPTH + 1 }, (_, depth) => depth).map((depth) => ({
      files: [`src/${layer}/${"*/".repeat(depth)}*.ts`],
      ignores: ["**/*.test.ts"],
      rules: {
        "no-restricted-imports": [
          "error",
          {
            paths: layer === "store" ? [] : drivers,
            patterns: [
              ...(layer === "core" ? [nodeBuiltins] : []),
              { regex: climbing(depth, targets), message },
            ],
          },
        ],
        // The same rule for `import("…")`, which no-restricted-imports does not see. (esquery's
        // regex literal cannot hold a "/", so the selector spells it \x2F.)
        "no-restricted-syntax": [
          "error",
          zodNamespace,
          ...(layer === "api" ? [typesOnly] : []),
          {
            selector: `ImportExpression > Literal[value=/${climbing(depth, targets).replaceAll("/", "\\x2F")}/]`,
            message,
          },
        ],
      },
    }));
  });
}

/** A specifier that climbs out of a layer `depth` folders deep, into none of `targets`. */
function climbing(depth, targets) {
  return `^(\\.\\./){${depth + 1}}${targets.length ? `(?!${targets.join("|")})` : ""}`;
}

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "node_modules/",
      "coverage/",
      ".stet/",
      "test-results/",
      // Eval modules stet must refuse: broken on purpose (test/fixtures/bad/README.md).
      "test/fixtures/bad/",
    ],
  },
  { files: ["**/*.{js,mjs}"], languageOptions: { globals: globals.node } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      "no-restricted-syntax": ["error", zodNamespace],
    },
  },
  ...layerRules(),
  {
    files: ["src/{core,engine,solvers,scorers,sandbox,dataset,eval,store,evalport}/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: {
      "no-console": "error",
      "no-restricted-properties": [
        "error",
        { object: "process", property: "exit", message: "Only the CLI exits." },
      ],
    },
  },
);
