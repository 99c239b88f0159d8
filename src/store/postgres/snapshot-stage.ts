import type { SampleRecord } from "../../core/types.js";
import { firstRepeat } from "../snapshot-pages.js";
import { statement, type Queryable } from "./driver.js";

/** SQLSTATE 23505: a statement would repeat a key of a UNIQUE constraint. */
const UNIQUE_VIOLATION = "23505";

/** A paged snapshot staged on a session until the run is written from it (`openStage`). */
export interface SnapshotStage {
  /** How many samples are staged. */
  readonly count: number;
  /** Stages samples after those before them; E_DUPLICATE_ID (none of them staged) on a repeat. */
  add(records: readonly SampleRecord[]): Promise<void>;
  /** Writes the staged samples as the run's snapshot, in the order they came; inside the run's transaction. */
  copyInto(tx: Queryable, runId: string): Promise<void>;
  /** Drops the stage. */
  drop(): Promise<void>;
}

/**
 * Opens a stage for a run's paged snapshot on `session`, a connection checked out for the whole
 * creation: a TEMP table, which no other session sees and which the server drops with the
 * session, so a killed process leaves nothing behind. Each `add` is one statement in autocommit,
 * between the awaits of the pages: no transaction stays open while the caller reads its next
 * page (the server would end a session idle in one: idle_in_transaction_session_timeout), and a
 * repeated id fails only its own statement, so it can still be named. `name` must be unique on
 * the session.
 *
 * @example const stage = await openStage(client, "stet_snapshot_stage_1"); await stage.add(rows);
 */
export async function openStage(session: Queryable, name: string): Promise<SnapshotStage> {
  const table = `pg_temp.${name}`;
  // "C", as the snapshot's ids are: a repeat is the same bytes, and the index compares bytes.
  await session.query(`CREATE TEMP TABLE ${name} (seq bigint PRIMARY KEY,
    sample_id text COLLATE "C" NOT NULL UNIQUE, fingerprint text NOT NULL, sample text NOT NULL)`);
  const insert = statement(
    `INSERT INTO ${table} (seq, sample_id, fingerprint, sample)
     SELECT @start::bigint + u.n - 1, u.sample_id, u.fingerprint, u.sample
     FROM unnest(@ids::text[], @fingerprints::text[], @samples::text[])
       WITH ORDINALITY AS u(sample_id, fingerprint, sample, n)`,
  );
  const staged = statement(
    `SELECT sample_id, seq::float8 AS seq FROM ${table} WHERE sample_id = ANY(@ids::text[])`,
  );
  const copy = statement(
    `INSERT INTO samples (run_id, sample_id, fingerprint, sample)
     SELECT @runId::text, sample_id, fingerprint, sample FROM ${table} ORDER BY seq`,
  );
  let count = 0;
  return {
    get count() {
      return count;
    },
    async add(records) {
      const ids = records.map((r) => r.sample.id);
      const fingerprints = records.map((r) => r.fingerprint);
      const samples = records.map((r) => JSON.stringify(r.sample));
      try {
        await insert.run(session, { start: count, ids, fingerprints, samples });
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        // The stage's UNIQUE refused a repeated id, and the statement staged nothing: name it
        // and both its positions (the earlier one staged, or in these records).
        const rows = await staged.rows<{ sample_id: string; seq: number }>(session, { ids });
        const earlier = new Map(rows.map((row) => [row.sample_id, row.seq]));
        throw firstRepeat(records, count, (id) => earlier.get(id)) ?? error;
      }
      count += records.length;
    },
    async copyInto(tx, runId) {
      await copy.run(tx, { runId });
    },
    async drop() {
      await session.query(`DROP TABLE IF EXISTS ${table}`);
    },
  };
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === UNIQUE_VIOLATION;
}
