import { journalPrefixMigration } from "./journal-prefix.js";
import { openLeasesMigration } from "./open-leases.js";
import { rerunFactsMigration } from "./rerun-facts.js";
import { rerunRequestsMigration } from "./rerun-requests.js";
import { runFiguresMigration } from "./run-figures.js";
import type { Migration } from "./types.js";

/**
 * The PostgreSQL schema, one numbered step at a time: the SQLite schema's tables and columns,
 * so both adapters map rows with the same code. Append new steps; never edit a shipped one.
 * A step that adds a table also adds it to `TABLES` in ../postgres/backup.ts, or backups omit it.
 *
 * - JSON columns are `text`, not `jsonb`: a stored attempt must read back byte for byte.
 * - Ids are `COLLATE "C"`: keys order by their bytes, as in SQLite, whatever the database locale.
 * - `heartbeat_at` is milliseconds on the database server's clock, so that every host judges a
 *   heartbeat's age by the same clock.
 * - `seq` columns give insertion order: runs created in the same millisecond, and the attempt
 *   feed's cursor (a run's writes serialize on its row lock, so within a run `seq` is commit order).
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "init",
    sql: `
CREATE TABLE runs (
  id TEXT COLLATE "C" PRIMARY KEY,
  seq BIGSERIAL NOT NULL UNIQUE,
  eval_name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'completed', 'errored')),
  config TEXT NOT NULL,
  sample_count INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  owner_host TEXT,
  owner_pid INTEGER,
  owner_token TEXT,
  heartbeat_at DOUBLE PRECISION,
  note TEXT,
  CHECK (
    (owner_token IS NULL) = (heartbeat_at IS NULL)
    AND (owner_token IS NULL) = (owner_host IS NULL)
    AND (owner_token IS NULL) = (owner_pid IS NULL)
  )
);

CREATE INDEX runs_by_created ON runs (created_at);

CREATE TABLE samples (
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
  sample_id TEXT COLLATE "C" NOT NULL,
  fingerprint TEXT NOT NULL,
  sample TEXT NOT NULL,
  PRIMARY KEY (run_id, sample_id)
);

CREATE TABLE attempts (
  seq BIGSERIAL NOT NULL UNIQUE,
  run_id TEXT COLLATE "C" NOT NULL,
  sample_id TEXT COLLATE "C" NOT NULL,
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  attempt INTEGER NOT NULL CHECK (attempt >= 1),
  status TEXT NOT NULL CHECK (status IN ('scored', 'error')),
  fingerprint TEXT NOT NULL,
  output TEXT NOT NULL,
  scores TEXT NOT NULL,
  input_tokens DOUBLE PRECISION,
  output_tokens DOUBLE PRECISION,
  cost_usd DOUBLE PRECISION,
  transcript TEXT,
  error TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT NOT NULL,
  duration_ms DOUBLE PRECISION NOT NULL,
  provenance_kind TEXT NOT NULL CHECK (provenance_kind IN ('executed', 'imported')),
  provenance_source TEXT,
  PRIMARY KEY (run_id, sample_id, epoch, attempt),
  FOREIGN KEY (run_id, sample_id) REFERENCES samples (run_id, sample_id)
);

CREATE INDEX attempts_by_outcome ON attempts (run_id, sample_id, epoch, fingerprint, status);
CREATE INDEX attempts_by_seq ON attempts (run_id, seq);

-- Completed work stands: stored attempts are never changed or removed, whoever asks.
CREATE FUNCTION stet_attempts_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'attempts are immutable';
END
$$;

CREATE TRIGGER attempts_immutable BEFORE UPDATE OR DELETE ON attempts
  FOR EACH ROW EXECUTE FUNCTION stet_attempts_immutable();

CREATE TABLE inflight (
  run_id TEXT COLLATE "C" NOT NULL,
  sample_id TEXT COLLATE "C" NOT NULL,
  epoch INTEGER NOT NULL,
  PRIMARY KEY (run_id, sample_id, epoch),
  FOREIGN KEY (run_id, sample_id) REFERENCES samples (run_id, sample_id)
);
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
    // As SQLite's migration 4: scorings of stored attempts, and attempts_now, every attempt with
    // its latest scoring's status, scores and error (else its own). DISTINCT ON keeps the
    // run_id predicate of a query on the view pushed down into the scorings side.
    sql: `
CREATE TABLE scorings (
  seq BIGSERIAL NOT NULL UNIQUE,
  run_id TEXT COLLATE "C" NOT NULL,
  sample_id TEXT COLLATE "C" NOT NULL,
  epoch INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  scoring INTEGER NOT NULL CHECK (scoring >= 1),
  pass TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('scored', 'error')),
  scores TEXT NOT NULL,
  rescored TEXT NOT NULL,
  scorer_config TEXT NOT NULL,
  error TEXT,
  input_tokens DOUBLE PRECISION,
  output_tokens DOUBLE PRECISION,
  cost_usd DOUBLE PRECISION,
  scored_at TEXT NOT NULL,
  duration_ms DOUBLE PRECISION NOT NULL,
  redacted TEXT,
  PRIMARY KEY (run_id, sample_id, epoch, attempt, scoring),
  FOREIGN KEY (run_id, sample_id, epoch, attempt) REFERENCES attempts (run_id, sample_id, epoch, attempt)
);

CREATE FUNCTION stet_scorings_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'scorings are immutable';
END
$$;

CREATE TRIGGER scorings_immutable BEFORE UPDATE OR DELETE ON scorings
  FOR EACH ROW EXECUTE FUNCTION stet_scorings_immutable();

CREATE VIEW attempts_now AS
SELECT a.seq, a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.scoring IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted
FROM attempts a LEFT JOIN (
  SELECT DISTINCT ON (run_id, sample_id, epoch, attempt)
    run_id, sample_id, epoch, attempt, scoring, status, scores, error
  FROM scorings ORDER BY run_id, sample_id, epoch, attempt, scoring DESC
) c ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
  AND c.attempt = a.attempt;
`,
  },
  {
    version: 5,
    name: "journal",
    // As SQLite's migration 5: the step journal, open rows (attempt NULL) until the key's attempt
    // commits and binds them.
    sql: `
CREATE TABLE journal (
  run_id TEXT COLLATE "C" NOT NULL,
  sample_id TEXT COLLATE "C" NOT NULL,
  epoch INTEGER NOT NULL,
  attempt INTEGER,
  step INTEGER NOT NULL CHECK (step >= 0),
  name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('step', 'chat')),
  input_hash TEXT NOT NULL,
  input TEXT NOT NULL,
  result TEXT,
  error TEXT,
  input_tokens DOUBLE PRECISION,
  output_tokens DOUBLE PRECISION,
  cost_usd DOUBLE PRECISION,
  recorded_at TEXT NOT NULL,
  duration_ms DOUBLE PRECISION NOT NULL,
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
    // As SQLite's migration 6: per-key leases (claimed with FOR UPDATE SKIP LOCKED) and workers.
    sql: `
CREATE TABLE leases (
  run_id TEXT COLLATE "C" NOT NULL,
  sample_id TEXT COLLATE "C" NOT NULL,
  epoch INTEGER NOT NULL,
  token TEXT, -- the holding worker's token; NULL: never claimed, or released
  expires_at DOUBLE PRECISION, -- ms on the store's clock; a lease past it is claimable again
  claims INTEGER NOT NULL DEFAULT 0, -- how many times the key was handed out
  done INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1)), -- the key has its outcome
  PRIMARY KEY (run_id, sample_id, epoch),
  FOREIGN KEY (run_id) REFERENCES runs (id)
);

CREATE INDEX leases_open ON leases (run_id, done, epoch, sample_id);
CREATE INDEX leases_by_token ON leases (token);

CREATE TABLE workers (
  token TEXT COLLATE "C" PRIMARY KEY,
  run_id TEXT COLLATE "C" NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  lease_ms INTEGER NOT NULL CHECK (lease_ms > 0),
  started_at TEXT NOT NULL,
  heartbeat_at DOUBLE PRECISION NOT NULL,
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
    // As SQLite's migration 7: re-sent model requests per attempt and per scoring, NULL (unknown)
    // on older rows; a nullable column without a default rewrites no row. attempts_now gains the
    // column at its end, which CREATE OR REPLACE VIEW allows.
    sql: `
ALTER TABLE attempts ADD COLUMN retries INTEGER CHECK (retries >= 0);
ALTER TABLE scorings ADD COLUMN retries INTEGER CHECK (retries >= 0);

CREATE OR REPLACE VIEW attempts_now AS
SELECT a.seq, a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.scoring IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted,
  a.retries
FROM attempts a LEFT JOIN (
  SELECT DISTINCT ON (run_id, sample_id, epoch, attempt)
    run_id, sample_id, epoch, attempt, scoring, status, scores, error
  FROM scorings ORDER BY run_id, sample_id, epoch, attempt, scoring DESC
) c ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
  AND c.attempt = a.attempt;
`,
  },
  {
    version: 8,
    name: "usage-detail",
    // As SQLite's migration 8: cached-read, cache-write and reasoning tokens and the reused part
    // of an attempt's usage, as JSON; NULL on older rows and when there is nothing beyond tokens
    // and cost. attempts_now gains the column at its end.
    sql: `
ALTER TABLE attempts ADD COLUMN usage_detail TEXT;
ALTER TABLE scorings ADD COLUMN usage_detail TEXT;
ALTER TABLE journal ADD COLUMN usage_detail TEXT;

CREATE OR REPLACE VIEW attempts_now AS
SELECT a.seq, a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.scoring IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted,
  a.retries, a.usage_detail
FROM attempts a LEFT JOIN (
  SELECT DISTINCT ON (run_id, sample_id, epoch, attempt)
    run_id, sample_id, epoch, attempt, scoring, status, scores, error
  FROM scorings ORDER BY run_id, sample_id, epoch, attempt, scoring DESC
) c ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
  AND c.attempt = a.attempt;
`,
  },
  {
    version: 9,
    name: "attempt-limits",
    // As SQLite's migration 10: which per-sample limit ended an attempt (AttemptLimit JSON), NULL
    // on every other attempt and on older rows. attempts_now gains the column at its end.
    sql: `
ALTER TABLE attempts ADD COLUMN limit_hit TEXT;

CREATE OR REPLACE VIEW attempts_now AS
SELECT a.seq, a.run_id, a.sample_id, a.epoch, a.attempt,
  COALESCE(c.status, a.status) AS status, a.fingerprint, a.output,
  COALESCE(c.scores, a.scores) AS scores, a.input_tokens, a.output_tokens, a.cost_usd,
  a.transcript, CASE WHEN c.scoring IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source, a.redacted,
  a.retries, a.usage_detail, a.limit_hit
FROM attempts a LEFT JOIN (
  SELECT DISTINCT ON (run_id, sample_id, epoch, attempt)
    run_id, sample_id, epoch, attempt, scoring, status, scores, error
  FROM scorings ORDER BY run_id, sample_id, epoch, attempt, scoring DESC
) c ON c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
  AND c.attempt = a.attempt;
`,
  },
  {
    version: 10,
    name: "reply-cache",
    // As in SQLite. The reply cache of model calls: a reply per call hash and credential hash (an HMAC with the
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
    version: 11,
    name: "reviews",
    // As in SQLite (migration 12): people's reviews of attempts, never replaced, apart from the
    // paid layer and the judges' scorings.
    sql: `
CREATE TABLE reviews (
  seq BIGSERIAL PRIMARY KEY,
  run_id TEXT COLLATE "C" NOT NULL,
  sample_id TEXT COLLATE "C" NOT NULL,
  epoch INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  scorer TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  note TEXT,
  created_at TEXT NOT NULL,
  FOREIGN KEY (run_id, sample_id, epoch, attempt) REFERENCES attempts (run_id, sample_id, epoch, attempt)
);
CREATE INDEX reviews_by_run ON reviews (run_id, seq);

CREATE FUNCTION stet_reviews_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'reviews are immutable';
END;
$$;
CREATE TRIGGER reviews_immutable BEFORE UPDATE OR DELETE ON reviews
  FOR EACH ROW EXECUTE FUNCTION stet_reviews_immutable();
`,
  },
  {
    version: 12,
    name: "rate-limits",
    // As in SQLite (migration 13). Rate limits shared by every process of the store: one token bucket per endpoint (its
    // level and when it was read, in ms of the store's clock), and each process's waits per run
    // and endpoint (totals it replaces as they grow; `show` sums them).
    sql: `
CREATE TABLE rate_buckets (
  endpoint TEXT PRIMARY KEY,
  requests DOUBLE PRECISION NOT NULL,
  tokens DOUBLE PRECISION NOT NULL,
  at_ms DOUBLE PRECISION NOT NULL
);
CREATE TABLE rate_waits (
  run_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  requests BIGINT NOT NULL,
  throttled BIGINT NOT NULL,
  rejected BIGINT NOT NULL,
  wait_ms BIGINT NOT NULL,
  PRIMARY KEY (run_id, owner, endpoint)
);
`,
  },
  {
    version: 13,
    name: "run-labels",
    // As in SQLite: a run's labels as a JSON object of strings (TEXT, as \`config\` is), NULL for
    // none; filtered by jsonb containment.
    sql: `ALTER TABLE runs ADD COLUMN labels TEXT;`,
  },
  {
    version: 14,
    name: "batch-submissions",
    // As in SQLite (migration 15). The provider batches of runs executed with --batch, each recorded before the
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
  {
    version: 15,
    name: "rate-waiting",
    // As in SQLite (migration 16): the requests waiting on a rate limit when a process recorded
    // its figures, and when, by the database server's clock.
    sql: `
ALTER TABLE rate_waits ADD COLUMN waiting BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN recorded_at_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
`,
  },
  runFiguresMigration(16, 'TEXT COLLATE "C"'),
  journalPrefixMigration(17),
  openLeasesMigration(18),
  rerunRequestsMigration(19, "postgres"),
  rerunFactsMigration(20, "postgres"),
];
