import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The suite waits far more than it computes (child processes killed and resumed, leases
    // expiring, rate-limit windows, servers answering late): 10.6 min of CPU in a 9.5-min run on
    // the 2 cores. Three test files at a time overlap their waits with each other's work, and one
    // module graph per worker (no fresh import of it for every file) saves 1–2 s a file: 261 files
    // passed in 570 s this way, against 870 s two at a time (CI, 2026-12-05) and 26 min one at a
    // time. A test file that changes process-wide state (the environment, timers) restores it in
    // its own hooks.
    maxWorkers: 3,
    isolate: false,
    // Refuses a dist/ older than src/: the CLI tests spawn bin/stet.js, which runs dist/.
    globalSetup: ["test/global-setup.ts"],
  },
});
