import { SQLITE_RATE_LIMITS, SQLITE_RATE_WAITING } from "./sqlite-rates.js";
import { journalPrefixMigration } from "./journal-prefix.js";
import { openLeasesMigration } from "./open-leases.js";
import { rerunFactsMigration } from "./rerun-facts.js";
import { rerunRequestsMigration } from "./rerun-requests.js";
import { runFiguresMigration } from "./run-figures.js";
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
  {
    version: 4,
    name: "scorings",
    // Scores as a layer of their own: a rescore (or a resume re-scoring a scorer error) adds a
    // scoring of a stored attempt and never rewrites the attempt. attempts_now is every attempt
    // with its current status, scores and error: its latest scoring's, else its own. Existing
    // rows are untouched; a store without scorings reads exactly as before.
    sql: `
CREATE TABLE scorings (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  sample_id TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  scoring INTEGER NOT NULL CHECK (scoring >= 1),
  pass TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('scored', 'error')),
  scores TEXT NOT NULL, -- JSON array of Score: every score the attempt has as of this scoring
  rescored TEXT NOT NULL, -- JSON array of the scorers this scoring ran (the others were carried over)
  scorer_config TEXT NOT NULL, -- JSON object: each of those scorers' describe(), by name
  error TEXT, -- AttemptError JSON (a scorer error) when status = 'error'
  input_tokens REAL, -- the scoring's own spend (a judge's); all three NULL without usage
  output_tokens REAL,
  cost_usd REAL,
  scored_at TEXT NOT NULL,
  duration_ms REAL NOT NULL,
  redacted TEXT,
  UNIQUE (run_id, sample_id, epoch, attempt, scoring),
  FOREIGN KEY (run_id, sample_id, epoch, attempt) REFERENCES attempts (run_id, sample_id, epoch, attempt)
);

CREATE TRIGGER scorings_no_update BEFORE UPDATE ON scorings
BEGIN
  SELECT RAISE(ABORT, 'scorings are immutable');
END;

CREATE TRIGGER scorings_no_delete BEFORE DELETE ON scorings
BEGIN
  SELECT RAISE(ABORT, 'scorings are never deleted');
END;

CREATE VIEW attempts_now AS
SELECT a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.seq IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted
FROM attempts a LEFT JOIN scorings c
  ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
    AND c.attempt = a.attempt
    AND c.scoring = (SELECT MAX(m.scoring) FROM scorings m WHERE m.run_id = a.run_id
      AND m.sample_id = a.sample_id AND m.epoch = a.epoch AND m.attempt = a.attempt);
`,
  },
  {
    version: 5,
    name: "journal",
    // The step journal: each ctx.step / ctx.chat result of a key's execution, written before the
    // agent sees it. attempt is NULL while the execution is open (in flight or interrupted: a
    // resume replays those rows); committing the key's attempt binds them to its number, and
    // they stay as the attempt's trajectory. Existing tables are untouched.
    sql: `
CREATE TABLE journal (
  run_id TEXT NOT NULL,
  sample_id TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  attempt INTEGER, -- NULL: an open execution's entry
  step INTEGER NOT NULL CHECK (step >= 0),
  name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('step', 'chat')),
  input_hash TEXT NOT NULL, -- sha256 of the canonical JSON of the step's input
  input TEXT NOT NULL, -- JSON, redacted
  result TEXT, -- JSON, redacted; NULL when the step threw
  error TEXT, -- StepError JSON when the step threw
  input_tokens REAL, -- a chat step's usage; all three NULL otherwise
  output_tokens REAL,
  cost_usd REAL,
  recorded_at TEXT NOT NULL,
  duration_ms REAL NOT NULL,
  redacted TEXT,
  FOREIGN KEY (run_id) REFERENCES runs (id)
);

CREATE UNIQUE INDEX journal_open ON journal (run_id, sample_id, epoch, step) WHERE attempt IS NULL;
CREATE UNIQUE INDEX journal_bound ON journal (run_id, sample_id, epoch, attempt, step)
  WHERE attempt IS NOT NULL;
`,
  },
  {
    version: 6,
    name: "leases",
    // Sample-level workers (issue 16): one lease row per key of a distributed run, claimed by a
    // worker's token until its expiry, and one row per worker that joined a run (what show, the
    // API and the UI list). Existing tables are untouched.
    sql: `
CREATE TABLE leases (
  run_id TEXT NOT NULL,
  sample_id TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  token TEXT, -- the holding worker's token; NULL: never claimed, or released
  expires_at REAL, -- ms on the store's clock; a lease past it is claimable again
  claims INTEGER NOT NULL DEFAULT 0, -- how many times the key was handed out
  done INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1)), -- the key has its outcome
  PRIMARY KEY (run_id, sample_id, epoch),
  FOREIGN KEY (run_id) REFERENCES runs (id)
);

CREATE INDEX leases_open ON leases (run_id, done, epoch, sample_id);
CREATE INDEX leases_by_token ON leases (token);

CREATE TABLE workers (
  token TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  lease_ms INTEGER NOT NULL CHECK (lease_ms > 0),
  started_at TEXT NOT NULL,
  heartbeat_at REAL NOT NULL,
  keys_done INTEGER NOT NULL DEFAULT 0,
  rejected INTEGER NOT NULL DEFAULT 0, -- writes refused by the lease fence
  state TEXT NOT NULL CHECK (state IN ('active', 'finished', 'stopped', 'lost')),
  FOREIGN KEY (run_id) REFERENCES runs (id)
);

CREATE INDEX workers_by_run ON workers (run_id);
`,
  },
  {
    version: 7,
    name: "retries",
    // How many model requests an attempt (or a scoring) re-sent after retryable failures. NULL
    // on the rows stored before: unknown, not 0; adding a nullable column rewrites no row.
    // attempts_now lists its columns, so it is made again with the new one at the end.
    sql: `
ALTER TABLE attempts ADD COLUMN retries INTEGER CHECK (retries >= 0);
ALTER TABLE scorings ADD COLUMN retries INTEGER CHECK (retries >= 0);

DROP VIEW attempts_now;
CREATE VIEW attempts_now AS
SELECT a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.seq IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted,
  a.retries
FROM attempts a LEFT JOIN scorings c
  ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
    AND c.attempt = a.attempt
    AND c.scoring = (SELECT MAX(m.scoring) FROM scorings m WHERE m.run_id = a.run_id
      AND m.sample_id = a.sample_id AND m.epoch = a.epoch AND m.attempt = a.attempt);
`,
  },
  {
    version: 8,
    name: "usage-detail",
    // The usage figures beyond tokens and cost: cached-read, cache-write and reasoning tokens,
    // and the part of an attempt's usage replayed from its journal (`reused`), as JSON (a
    // UsageDetail). NULL on older rows and when there is nothing beyond tokens and cost: none of
    // those tiers, nothing replayed. Adding a nullable column rewrites no row; attempts_now is
    // made again with the new column at its end.
    sql: `
ALTER TABLE attempts ADD COLUMN usage_detail TEXT;
ALTER TABLE scorings ADD COLUMN usage_detail TEXT;
ALTER TABLE journal ADD COLUMN usage_detail TEXT;

DROP VIEW attempts_now;
CREATE VIEW attempts_now AS
SELECT a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.seq IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted,
  a.retries, a.usage_detail
FROM attempts a LEFT JOIN scorings c
  ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
    AND c.attempt = a.attempt
    AND c.scoring = (SELECT MAX(m.scoring) FROM scorings m WHERE m.run_id = a.run_id
      AND m.sample_id = a.sample_id AND m.epoch = a.epoch AND m.attempt = a.attempt);
`,
  },
  {
    version: 9,
    name: "attempts-now-commit-order",
    // attempts_now gains its attempt's place in the commit order (the rowid, as \`seq\`, the name
    // PostgreSQL's view has had since migration 4): a read in pages keeps to the attempts
    // committed before its first page, so other workers' commits between pages do not tear it.
    // A view only: no row is rewritten.
    sql: `
DROP VIEW attempts_now;
CREATE VIEW attempts_now AS
SELECT a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.seq IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted,
  a.retries, a.usage_detail, a.rowid AS seq
FROM attempts a LEFT JOIN scorings c
  ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
    AND c.attempt = a.attempt
    AND c.scoring = (SELECT MAX(m.scoring) FROM scorings m WHERE m.run_id = a.run_id
      AND m.sample_id = a.sample_id AND m.epoch = a.epoch AND m.attempt = a.attempt);
`,
  },
  {
    version: 10,
    name: "attempt-limits",
    // Which per-sample limit ended an attempt (an AttemptLimit as JSON: the limit, its value and
    // what was used); NULL on every other attempt and on the rows stored before limits existed.
    // Adding a nullable column rewrites no row; attempts_now is made again with it at its end.
    sql: `
ALTER TABLE attempts ADD COLUMN limit_hit TEXT;

DROP VIEW attempts_now;
CREATE VIEW attempts_now AS
SELECT a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.seq IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted,
  a.retries, a.usage_detail, a.rowid AS seq, a.limit_hit
FROM attempts a LEFT JOIN scorings c
  ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
    AND c.attempt = a.attempt
    AND c.scoring = (SELECT MAX(m.scoring) FROM scorings m WHERE m.run_id = a.run_id
      AND m.sample_id = a.sample_id AND m.epoch = a.epoch AND m.attempt = a.attempt);
`,
  },
  {
    version: 11,
    name: "reply-cache",
    // The reply cache of model calls: a reply per call hash and credential hash (an HMAC with the
    // store's salt, kept in store_meta; never the credential), the call's canonical text beside
    // it (compared on every read), and when it was stored (ttl, prune).
    sql: `
CREATE TABLE store_meta (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE reply_cache (
  call_hash TEXT NOT NULL,
  credential TEXT NOT NULL,
  request TEXT NOT NULL,
  reply TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (call_hash, credential)
);
CREATE INDEX reply_cache_created ON reply_cache (created_at);
`,
  },
  {
    version: 12,
    name: "reviews",
    // People's reviews of attempts: a scorer name (human or human:<rubric>), the reviewer, a value
    // and a note, in the order they were made (seq). Kept apart from attempts and scorings: a
    // review never changes the paid layer or a judge's scores, and nothing is ever replaced
    // (a later review of the same key by the same reviewer supersedes the earlier for metrics).
    sql: `
CREATE TABLE reviews (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  sample_id TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  scorer TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  value REAL NOT NULL,
  note TEXT,
  created_at TEXT NOT NULL,
  FOREIGN KEY (run_id, sample_id, epoch, attempt) REFERENCES attempts (run_id, sample_id, epoch, attempt)
);
CREATE INDEX reviews_by_run ON reviews (run_id, seq);

CREATE TRIGGER reviews_no_update BEFORE UPDATE ON reviews
BEGIN
  SELECT RAISE(ABORT, 'reviews are immutable');
END;

CREATE TRIGGER reviews_no_delete BEFORE DELETE ON reviews
BEGIN
  SELECT RAISE(ABORT, 'reviews are immutable');
END;
`,
  },
  SQLITE_RATE_LIMITS,
  {
    version: 14,
    name: "run-labels",
    // A run's labels (\`--label\`, git, CI) as a JSON object of strings, keys sorted; NULL for a
    // run without any and for every run stored before labels existed. Adding a nullable column
    // rewrites no row. Runs are filtered by labels with json_each, so no index is needed for it:
    // a store holds runs by the thousand, not by the million.
    sql: `ALTER TABLE runs ADD COLUMN labels TEXT;`,
  },
  {
    version: 15,
    name: "batch-submissions",
    // The provider batches of runs executed with --batch, each recorded before the
    // provider is asked to create it: a nonce (carried by the batch), the keys with their custom
    // ids and request hashes, the batch id once known, and what became of it.
    sql: `
CREATE TABLE batch_submissions (
  nonce TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  keys TEXT NOT NULL,
  batch_id TEXT,
  status TEXT NOT NULL,
  note TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX batch_submissions_run ON batch_submissions (run_id, created_at);
`,
  },
  SQLITE_RATE_WAITING,
  runFiguresMigration(17, "TEXT", " WITHOUT ROWID"),
  journalPrefixMigration(18),
  openLeasesMigration(19),
  rerunRequestsMigration(20, "sqlite"),
  rerunFactsMigration(21, "sqlite"),
];
