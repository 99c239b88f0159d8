import type { Migration } from "./types.js";

/**
 * The SQLite schema, one numbered step at a time. Append new steps; never edit a shipped one
 * (a store records which versions it has applied and skips them). They live in code rather than
 * in .sql files so that the bundled build needs no files beside it.
 */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "init",
    sql: `
-- Runs, their sample snapshots, attempts and in-flight marks.
-- Times of state changes are ISO-8601 text; heartbeat_at is milliseconds since the epoch (store clock).

CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  eval_name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'completed', 'errored')),
  config TEXT NOT NULL, -- RunConfig JSON
  sample_count INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  owner_host TEXT,
  owner_pid INTEGER,
  owner_token TEXT, -- the fencing token; NULL when nobody owns the run
  heartbeat_at INTEGER,
  note TEXT,
  -- an owner is all four columns or none
  CHECK (
    (owner_token IS NULL) = (heartbeat_at IS NULL)
    AND (owner_token IS NULL) = (owner_host IS NULL)
    AND (owner_token IS NULL) = (owner_pid IS NULL)
  )
);

CREATE INDEX runs_by_created ON runs (created_at);

CREATE TABLE samples (
  run_id TEXT NOT NULL REFERENCES runs (id),
  sample_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  sample TEXT NOT NULL, -- the whole Sample as JSON
  PRIMARY KEY (run_id, sample_id)
);

CREATE TABLE attempts (
  run_id TEXT NOT NULL,
  sample_id TEXT NOT NULL,
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  attempt INTEGER NOT NULL CHECK (attempt >= 1),
  status TEXT NOT NULL CHECK (status IN ('scored', 'error')),
  fingerprint TEXT NOT NULL,
  output TEXT NOT NULL, -- JSON
  scores TEXT NOT NULL, -- JSON array of Score
  input_tokens REAL, -- usage; all three NULL when the attempt has no usage
  output_tokens REAL,
  cost_usd REAL,
  transcript TEXT, -- JSON; NULL for JSON null
  error TEXT, -- AttemptError JSON
  started_at TEXT NOT NULL,
  completed_at TEXT NOT NULL,
  duration_ms REAL NOT NULL,
  provenance_kind TEXT NOT NULL CHECK (provenance_kind IN ('executed', 'imported')),
  provenance_source TEXT,
  PRIMARY KEY (run_id, sample_id, epoch, attempt),
  FOREIGN KEY (run_id, sample_id) REFERENCES samples (run_id, sample_id)
);

-- Covers counting and the "already scored" check without touching the (large) attempt rows.
CREATE INDEX attempts_by_outcome ON attempts (run_id, sample_id, epoch, fingerprint, status);

-- Completed work stands: stored attempts are never changed or removed, whoever asks.
CREATE TRIGGER attempts_no_update BEFORE UPDATE ON attempts
BEGIN
  SELECT RAISE(ABORT, 'attempts are immutable');
END;

CREATE TRIGGER attempts_no_delete BEFORE DELETE ON attempts
BEGIN
  SELECT RAISE(ABORT, 'attempts are never deleted');
END;

CREATE TABLE inflight (
  run_id TEXT NOT NULL,
  sample_id TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  PRIMARY KEY (run_id, sample_id, epoch),
  FOREIGN KEY (run_id, sample_id) REFERENCES samples (run_id, sample_id)
) WITHOUT ROWID;
`,
  },
  {
    version: 2,
    name: "cancel-requests",
    // A cancel asked for through the store (\`stet cancel\` from anywhere): the owner reads it with
    // its heartbeat and stops as on SIGINT. Cleared whenever the run changes hands.
    sql: `ALTER TABLE runs ADD COLUMN cancel_requested TEXT;`,
  },
  {
    version: 3,
    name: "attempt-redactions",
    // The names of the known secrets an attempt's content held, replaced before it was written
    // (JSON array; NULL when nothing was redacted). Existing rows stay as they are.
    sql: `ALTER TABLE attempts ADD COLUMN redacted TEXT;`,
  },
];
