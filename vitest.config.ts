import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Refuses a dist/ older than src/: the CLI tests spawn bin/stet.js, which runs dist/.
    globalSetup: ["test/global-setup.ts"],
  },
});
