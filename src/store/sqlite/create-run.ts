import type { Run } from "../../core/types.js";
import { checkNewRun, checkUniqueSampleIds, runExists } from "../checks.js";
import { ownerParams } from "../rows.js";
import { labelsColumn } from "../run-rows.js";
import { isSamplePages, type SamplePages } from "../snapshot-pages.js";
import type { NewRun } from "../types.js";
import type { SqliteContext } from "./context.js";
import { immediate } from "./driver.js";
import { createFigures } from "./figures.js";
import { openStage } from "./snapshot-stage.js";
import { rowWriter } from "./statements.js";

/**
 * Creates a run with its snapshot, given whole or in pages (`RunStore.create`): the run row, the
 * snapshot, the leases of a distributed run and its first figures, in one transaction.
 *
 * @example const run = await createRun(c, { id, config, samples, owner });
 */
export async function createRun(c: SqliteContext, input: NewRun): Promise<Run> {
  const { samples } = input;
  if (isSamplePages(samples)) return createFromPages(c, input, samples);
  return c.guard(() => {
    checkNewRun(input);
    writeRun(c, input, samples.length, () => {
      const rows = rowWriter(c.s.insertSample, c.s.insertSampleRows, 4);
      try {
        for (const { sample, fingerprint } of samples) {
          rows.push(input.id, sample.id, fingerprint, JSON.stringify(sample));
        }
        rows.end();
      } catch (error) {
        // The snapshot's key refused a repeated sample id: name it (E_DUPLICATE_ID).
        if (isPrimaryKeyViolation(error)) checkUniqueSampleIds(samples);
        throw error;
      }
    });
    return c.requireRun(input.id);
  });
}

/**
 * A paged snapshot is staged page by page on the connection (`openStage`), then the run is
 * written from the stage in one synchronous transaction. The page source's own failure is thrown
 * as it is; whatever fails, the stage is dropped and no run was written.
 */
async function createFromPages(c: SqliteContext, input: NewRun, pages: SamplePages): Promise<Run> {
  c.guard(() => {
    checkNewRun(input);
    // Refused before staging what could be a million samples; checked again as it is written.
    if (c.s.getRun.get(input.id)) throw runExists(input.id);
  });
  const stage = c.guard(() => openStage(c.db, c.stageName()));
  try {
    for await (const page of pages) c.guard(() => stage.add(page));
    return c.guard(() => {
      writeRun(c, input, stage.count, () => stage.copyInto(input.id));
      return c.requireRun(input.id);
    });
  } finally {
    c.guard(() => stage.drop());
  }
}

/** Inside one IMMEDIATE transaction: the run row, its snapshot (`writeSnapshot`), leases, figures. */
function writeRun(
  c: SqliteContext,
  input: NewRun,
  sampleCount: number,
  writeSnapshot: () => void,
): void {
  const { id, config } = input;
  const nowMs = c.now();
  immediate(c.db, () => {
    if (c.s.getRun.get(id)) throw runExists(id);
    c.s.insertRun.run({
      id,
      evalName: config.evalName,
      config: JSON.stringify(config),
      sampleCount,
      labels: labelsColumn(input.labels),
      now: new Date(nowMs).toISOString(),
      nowMs,
      ...ownerParams(input.owner),
    });
    writeSnapshot();
    if (config.distributed) c.leases.create(id, config.epochs);
    createFigures(c, id, config.reducer);
  });
}

function isPrimaryKeyViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}
