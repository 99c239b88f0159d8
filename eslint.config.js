import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

/** DESIGN §6: core imports nothing of ours; engine sees core and the store interface only. */
const nodeBuiltins = { group: ["node:*"], message: "core/ is pure: no Node-specific imports." };
/** Database drivers belong to their store adapters (DESIGN §6): everything else sees the Store port. */
const drivers = ["better-sqlite3", "pg"].map((name) => ({
  name,
  message: "Only store/ adapters import a database driver; use the Store port.",
}));
/** zod's named `z` export holds all of zod; the namespace import lets the bundle keep what is used. */
const zodNamespace = {
  selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier[imported.name='z']",
  message: 'Write `import * as z from "zod"`: the named `z` pulls all of zod into dist/.',
};

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "coverage/", ".stet/"] },
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
  {
    files: ["src/**/*.ts"],
    ignores: ["src/store/**/*.ts", "**/*.test.ts"],
    rules: { "no-restricted-imports": ["error", { paths: drivers }] },
  },
  {
    files: ["src/core/**/*.ts"],
    ignores: ["src/core/**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: drivers,
          patterns: [
            nodeBuiltins,
            { regex: "^\\.\\./", message: "core/ imports nothing of ours outside core/." },
          ],
        },
      ],
    },
  },
  {
    files: ["src/engine/**/*.ts"],
    ignores: ["src/engine/**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: drivers,
          patterns: [
            {
              regex: "^\\.\\./(?!core/|store/types\\.js$)",
              message: "engine/ depends on core/ and the store interface (store/types.ts) only.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["src/{core,engine,solvers,scorers,dataset,eval,store,evalport}/**/*.ts"],
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
