import type { Migration } from "./types.js";

/**
 * SQLite migration 20 (PostgreSQL 19): a run's re-run requests (`--rerun`, `--rerun-failed`,
 * `--rerun-limited`: which keys execute again, each after which of its attempts) in a table of
 * their own, one row a key, moved out of the run's config, where every read of the run parsed
 * them: a `--rerun-failed` of 171,428 keys made each `runs.get` of that run 212 ms. Read a page at
 * a time in key order (`reads.rerunPages`), replaced with the config a resume's claim records.
 */
export function rerunRequestsMigration(version: number, dialect: "sqlite" | "postgres"): Migration {
  return {
    version,
    name: "rerun-requests",
    sql: dialect === "sqlite" ? SQLITE : POSTGRES,
  };
}

// A request repeated in a config (never written so, but a Map's last one is what planning read)
// keeps its last entry.
const SQLITE = `
CREATE TABLE rerun_requests (
  run_id TEXT NOT NULL,
  sample_id TEXT NOT NULL,
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  after_attempt INTEGER NOT NULL CHECK (after_attempt >= 0),
  PRIMARY KEY (run_id, sample_id, epoch)
) WITHOUT ROWID;
INSERT OR REPLACE INTO rerun_requests (run_id, sample_id, epoch, after_attempt)
  SELECT runs.id, json_extract(r.value, '$.sampleId'), json_extract(r.value, '$.epoch'),
         json_extract(r.value, '$.after')
  FROM runs, json_each(runs.config, '$.rerun') AS r
  ORDER BY runs.id, r.key;
UPDATE runs SET config = json_remove(config, '$.rerun')
  WHERE json_type(config, '$.rerun') IS NOT NULL;
`;

const POSTGRES = `
CREATE TABLE rerun_requests (
  run_id TEXT COLLATE "C" NOT NULL,
  sample_id TEXT COLLATE "C" NOT NULL,
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  after_attempt INTEGER NOT NULL CHECK (after_attempt >= 0),
  PRIMARY KEY (run_id, sample_id, epoch)
);
INSERT INTO rerun_requests (run_id, sample_id, epoch, after_attempt)
  SELECT DISTINCT ON (runs.id, r.value->>'sampleId', (r.value->>'epoch')::int)
         runs.id, r.value->>'sampleId', (r.value->>'epoch')::int, (r.value->>'after')::int
  FROM runs, jsonb_array_elements(runs.config::jsonb -> 'rerun') WITH ORDINALITY AS r(value, n)
  WHERE runs.config::jsonb ? 'rerun'
  ORDER BY runs.id, r.value->>'sampleId', (r.value->>'epoch')::int, r.n DESC;
UPDATE runs SET config = (config::jsonb - 'rerun')::text WHERE config::jsonb ? 'rerun';
`;
