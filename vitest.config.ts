import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The suite waits far more than it computes (child processes killed and resumed, leases
    // expiring, servers answering late): 10.4 min of CPU in a 26-min single-worker run. Two test
    // files at a time overlap one's waits with the other's work, and one module graph per worker
    // (no fresh import of it for every file) saves 1–2 s a file: 235 files passed in 19 min this
    // way on a machine at load 10, against 26 min one at a time. A test file that changes
    // process-wide state (the environment, timers) restores it in its own hooks.
    maxWorkers: 2,
    isolate: false,
    // Refuses a dist/ older than src/: the CLI tests spawn bin/stet.js, which runs dist/.
    globalSetup: ["test/global-setup.ts"],
  },
});
