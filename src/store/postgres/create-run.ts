import type { PoolClient } from "pg";
import type { Run, SampleRecord } from "../../core/types.js";
import { checkNewRun, checkUniqueSampleIds, runExists } from "../checks.js";
import { ownerParams } from "../rows.js";
import { labelsColumn } from "../run-rows.js";
import { firstRepeat, isSamplePages, type SamplePages } from "../snapshot-pages.js";
import type { NewRun } from "../types.js";
import type { PostgresContext } from "./context.js";
import { transaction } from "./driver.js";
import { createFigures } from "./figures.js";
import { postgresLeases as leases } from "./lease-queries.js";
import { postgresStatements as sql } from "./statements.js";

/** Snapshot rows a statement of `create` inserts. */
const SAMPLE_PAGE = 5_000;

/**
 * Creates a run with its snapshot, given whole or in pages (`RunStore.create`): the run row, the
 * snapshot, the leases of a distributed run and its first figures, in one transaction.
 *
 * @example const run = await createRun(c, { id, config, samples, owner });
 */
export async function createRun(c: PostgresContext, input: NewRun): Promise<Run> {
  const { samples } = input;
  if (isSamplePages(samples)) return createFromPages(c, input, samples);
  checkNewRun(input);
  return c.guard(async () => {
    await transaction(c.pool, async (tx) => {
      await insertRun(tx, input, samples.length);
      // A page of rows a statement, in the run's one transaction: the statement's arrays
      // (the samples as JSON) are a page's, never the whole snapshot's at once.
      for (let at = 0; at < samples.length; at += SAMPLE_PAGE) {
        await sql.insertSamples
          .run(tx, { runId: input.id, ...columns(samples.slice(at, at + SAMPLE_PAGE)) })
          .catch((error: unknown) => {
            // The snapshot's key refused a repeated sample id: name it (E_DUPLICATE_ID).
            if (isSnapshotKeyViolation(error)) checkUniqueSampleIds(samples);
            throw error;
          });
      }
      await finishRun(tx, input);
    });
    return c.requireRun(c.pool, input.id);
  });
}

/**
 * A paged snapshot is written as its pages come, SAMPLE_PAGE rows a statement, in the run's one
 * transaction (held open while the caller reads its next page); the run's sample count is set
 * once all are written. The page source's own failure is thrown as it is, not as the store's.
 */
async function createFromPages(
  c: PostgresContext,
  input: NewRun,
  pages: SamplePages,
): Promise<Run> {
  checkNewRun(input);
  const source = watched(pages);
  try {
    return await c.guard(async () => {
      await transaction(c.pool, async (tx) => {
        await insertRun(tx, input, 0);
        await sql.createPositions.run(tx);
        let count = 0;
        for await (const statement of statements(source.pages, SAMPLE_PAGE)) {
          await insertAt(tx, input.id, statement, count);
          count += statement.length;
        }
        await sql.setSampleCount.run(tx, { runId: input.id, sampleCount: count });
        await finishRun(tx, input);
      });
      return c.requireRun(c.pool, input.id);
    });
  } catch (error) {
    throw source.failure ? source.failure.error : error;
  }
}

/** Writes the samples of one statement from position `start`; E_DUPLICATE_ID on a repeated id. */
async function insertAt(
  tx: PoolClient,
  runId: string,
  records: readonly SampleRecord[],
  start: number,
): Promise<void> {
  const written = await sql.insertSamplesAt.run(tx, { runId, start, ...columns(records) });
  if (written === records.length) return;
  const ids = records.map((r) => r.sample.id);
  const rows = await sql.earlierPositions.rows<{ sample_id: string; seq: number }>(tx, {
    start,
    ids,
  });
  const earlier = new Map(rows.map((row) => [row.sample_id, row.seq]));
  const repeat = firstRepeat(records, start, (id) => earlier.get(id));
  throw repeat ?? new Error(`wrote ${written} of ${records.length} samples, and none repeats`);
}

async function insertRun(tx: PoolClient, input: NewRun, sampleCount: number): Promise<void> {
  const { id, config } = input;
  const inserted = await sql.insertRun.run(tx, {
    id,
    evalName: config.evalName,
    config: JSON.stringify(config),
    sampleCount,
    labels: labelsColumn(input.labels),
    ...ownerParams(input.owner),
  });
  if (inserted === 0) throw runExists(id);
}

/** After the snapshot: a distributed run's leases, and the run's first figures. */
async function finishRun(tx: PoolClient, { id, config }: NewRun): Promise<void> {
  if (config.distributed) await leases.create(tx, id, config.epochs);
  await createFigures(tx, id, config.reducer);
}

function columns(records: readonly SampleRecord[]) {
  return {
    ids: records.map((r) => r.sample.id),
    fingerprints: records.map((r) => r.fingerprint),
    samples: records.map((r) => JSON.stringify(r.sample)),
  };
}

/** The samples of `pages` again, `size` to a group (the last one fewer): pages of any size. */
async function* statements(pages: SamplePages, size: number): AsyncGenerator<SampleRecord[]> {
  let group: SampleRecord[] = [];
  for await (const page of pages) {
    for (const record of page) {
      group.push(record);
      if (group.length < size) continue;
      yield group;
      group = [];
    }
  }
  if (group.length > 0) yield group;
}

/** `pages`, remembering a failure of their own: the store's guard would call it a store failure. */
function watched(pages: SamplePages) {
  const source: { pages: SamplePages; failure?: { error: unknown } } = { pages };
  source.pages = (async function* () {
    try {
      yield* pages;
    } catch (error) {
      source.failure = { error };
      throw error;
    }
  })();
  return source;
}

function isSnapshotKeyViolation(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === "23505" && constraint === "samples_pkey";
}
