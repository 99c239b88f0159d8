import type { PoolClient } from "pg";
import type { Run, SampleRecord } from "../../core/types.js";
import { checkNewRun, checkUniqueSampleIds, runExists } from "../checks.js";
import { ownerParams } from "../rows.js";
import { labelsColumn } from "../run-rows.js";
import { isSamplePages, type SamplePages } from "../snapshot-pages.js";
import type { NewRun } from "../types.js";
import type { PostgresContext } from "./context.js";
import { checkOut, transaction, transactionOn } from "./driver.js";
import { createFigures } from "./figures.js";
import { postgresLeases as leases } from "./lease-queries.js";
import { openStage } from "./snapshot-stage.js";
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
 * A paged snapshot is staged on one connection, checked out for the whole creation, outside any
 * transaction (`openStage`); then the run is written from the stage in one short transaction on
 * it. The page source's own failure is thrown as it is; whatever fails, the stage is dropped and
 * no run was written.
 */
async function createFromPages(
  c: PostgresContext,
  input: NewRun,
  pages: SamplePages,
): Promise<Run> {
  checkNewRun(input);
  const session = await c.guard(() => checkOut(c.pool));
  try {
    const { client } = session;
    // Refused before staging what could be a million samples; checked again as it is written.
    await c.guard(async () => {
      if (await c.readRun(client, input.id)) throw runExists(input.id);
    });
    const stage = await c.guard(() => openStage(client, c.stageName()));
    try {
      // The pages are read outside `guard`: their own failure is not the store's.
      for await (const group of statements(pages, SAMPLE_PAGE)) {
        await c.guard(() => stage.add(group));
      }
      return await c.guard(async () => {
        await transactionOn(session, async (tx) => {
          await insertRun(tx, input, stage.count);
          await stage.copyInto(tx, input.id);
          await finishRun(tx, input);
        });
        // The planner's statistics of the samples, which a large snapshot just outdated: without
        // them a keyset page of the snapshot (the run's keys are read from it) scanned and sorted
        // every sample of the run, 66 ms a page at 200,000 (autovacuum, if on, comes later).
        await c.plannerStats.check(client, "samples", input.id);
        // On this connection: another from the pool could be waited for by every creation.
        return c.requireRun(client, input.id);
      });
    } finally {
      // A stage that would not drop goes with its connection, which the pool then closes.
      await stage.drop().catch((error: Error) => session.discard(error));
    }
  } finally {
    session.release();
  }
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

function isSnapshotKeyViolation(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === "23505" && constraint === "samples_pkey";
}
