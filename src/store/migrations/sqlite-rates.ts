import type { Migration } from "./types.js";

// The SQLite steps of the rate limits' tables, in SQLITE_MIGRATIONS at their places (13, 16).

export const SQLITE_RATE_LIMITS: Migration = {
  version: 13,
  name: "rate-limits",
  // Rate limits shared by every process of the store: one token bucket per endpoint (its
  // level and when it was read, in ms of the store's clock), and each process's waits per run
  // and endpoint (totals it replaces as they grow; `show` sums them).
  sql: `
CREATE TABLE rate_buckets (
  endpoint TEXT PRIMARY KEY,
  requests REAL NOT NULL,
  tokens REAL NOT NULL,
  at_ms REAL NOT NULL
);
CREATE TABLE rate_waits (
  run_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  requests INTEGER NOT NULL,
  throttled INTEGER NOT NULL,
  rejected INTEGER NOT NULL,
  wait_ms INTEGER NOT NULL,
  PRIMARY KEY (run_id, owner, endpoint)
);
`,
};

export const SQLITE_RATE_WAITING: Migration = {
  version: 16,
  name: "rate-waiting",
  // What each process's rate-limit figures add: the requests waiting on a rate limit when it
  // recorded them, and when (ms since the epoch, by the store's clock), so a reader tells a
  // running run that waits now from a process's last words long ago. Defaults: none waiting,
  // recorded at 0 (never now).
  sql: `
ALTER TABLE rate_waits ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rate_waits ADD COLUMN recorded_at_ms REAL NOT NULL DEFAULT 0;
`,
};
