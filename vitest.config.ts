import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two test files at a time: most files wait on child processes, servers and lease timeouts
    // rather than on a core, so two overlap well on the 2-core CI machine (one alone left the
    // suite at ~19 min).
    maxWorkers: 2,
    // Refuses a dist/ older than src/: the CLI tests spawn bin/stet.js, which runs dist/.
    globalSetup: ["test/global-setup.ts"],
  },
});
