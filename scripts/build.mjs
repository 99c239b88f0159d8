// Compiles src/ to dist/ and copies the SQL migrations beside the compiled store adapters.
import { execFileSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
rmSync("dist", { recursive: true, force: true });
execFileSync(
  process.execPath,
  [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"],
  {
    stdio: "inherit",
  },
);
cpSync("src/store/migrations", "dist/store/migrations", { recursive: true });
