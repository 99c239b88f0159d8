import { createRun } from "./create-run.js";
import { figuresAfterRescore, rebuildRerunFacts } from "./figures.js";
import type {
  Key,
  OwnerIdentity,
  RerunRecord,
  Run,
  RunConfig,
  RunStatus,
  SampleRecord,
} from "../../core/types.js";
import { checkRunConfig, checkUniqueSampleIds, illegalRelease, notInSnapshot } from "../checks.js";
import { ownerParams } from "../rows.js";
import {
  askedFlags,
  checkRerunRecord,
  figuresNotBuilt,
  isAsked,
  RERUN_ROWS_A_STATEMENT,
} from "../rerun-rows.js";
import type { HeartbeatReply, NewRun, RunStore } from "../types.js";
import type { PostgresContext } from "./context.js";
import { transaction } from "./driver.js";
import { postgresLeases as leases } from "./lease-queries.js";
import { postgresStatements as sql } from "./statements.js";

/** Run records and their ownership (`RunStore`) in PostgreSQL. */
export function postgresRuns(c: PostgresContext): RunStore {
  return {
    async create(input: NewRun): Promise<Run> {
      return createRun(c, input);
    },
    async get(runId: string): Promise<Run | undefined> {
      return c.guard(() => c.readRun(c.pool, runId));
    },
    async updateSamples(runId: string, token: string, records: SampleRecord[]): Promise<void> {
      checkUniqueSampleIds(records);
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          await c.fence(tx, runId, token);
          for (const { sample, fingerprint } of records) {
            const changed = await sql.updateSample.run(tx, {
              runId,
              sampleId: sample.id,
              fingerprint,
              sample: JSON.stringify(sample),
            });
            if (changed === 0) throw notInSnapshot(runId, sample.id);
          }
          // A changed sample's outcomes are its attempts for its new content.
          await figuresAfterRescore(
            c.lastFigures,
            tx,
            runId,
            records.map((r) => r.sample.id),
          );
          await sql.touchRun.run(tx, { runId });
        }),
      );
    },
    async claim(
      runId: string,
      owner: OwnerIdentity,
      expectedToken: string | null,
    ): Promise<boolean> {
      return c.guard(
        async () =>
          (await sql.claimRun.run(c.pool, { runId, expectedToken, ...ownerParams(owner) })) === 1,
      );
    },
    async heartbeat(runId: string, token: string): Promise<HeartbeatReply> {
      return c.guard(async () => {
        const [row] = await sql.heartbeat.rows<{ cancel_requested: string | null }>(c.pool, {
          runId,
          token,
        });
        if (row) return { owned: true, cancelRequested: row.cancel_requested };
        return (await leases.heartbeat(c.pool, runId, token)) ?? { owned: false };
      });
    },
    async requestCancel(runId: string, token: string, note: string): Promise<boolean> {
      return c.guard(
        async () => (await sql.requestCancel.run(c.pool, { runId, token, note })) === 1,
      );
    },
    async updateConfig(
      runId: string,
      token: string,
      config: RunConfig,
      reruns?: RerunRecord,
    ): Promise<boolean> {
      checkRunConfig(config);
      const listed = reruns ? checkRerunRecord(reruns) : [];
      const text = JSON.stringify(config);
      if (!reruns) {
        return c.guard(
          async () => (await sql.updateRunConfig.run(c.pool, { runId, token, config: text })) === 1,
        );
      }
      const asked = isAsked(reruns) ? reruns : undefined;
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          if (asked && (await sql.figuresBuilt.rows(tx, { runId })).length === 0) {
            throw figuresNotBuilt(runId);
          }
          if ((await sql.updateRunConfig.run(tx, { runId, token, config: text })) !== 1) {
            return false;
          }
          // Asked: the recorded ones not done stay; else all are replaced.
          await (asked ? sql.pruneReruns : sql.clearReruns).run(tx, { runId });
          for (let i = 0; i < listed.length; i += RERUN_ROWS_A_STATEMENT) {
            const rows = listed.slice(i, i + RERUN_ROWS_A_STATEMENT);
            await sql.insertReruns.run(tx, {
              runId,
              ids: rows.map((r) => r.sampleId),
              epochs: rows.map((r) => r.epoch),
              afters: rows.map((r) => r.after),
            });
          }
          if (asked) await sql.recordAsked.run(tx, { runId, ...askedFlags(asked.outcomes) });
          // Above some 10,000 requests the planner's cost of their lookups sets off JIT
          // compilation, which took most of the time of the same statements' reads.
          await tx.query("SET LOCAL jit = off");
          await rebuildRerunFacts(tx, runId);
          return true;
        }),
      );
    },
    async release(
      runId: string,
      token: string,
      status: RunStatus,
      note?: string,
    ): Promise<boolean> {
      if (status === "running") throw illegalRelease(runId);
      return c.guard(async () => {
        const params = { runId, token, status, note: note ?? null };
        const released = (await sql.releaseRun.run(c.pool, params)) === 1;
        // The re-run requests this owner's work finished are done for good: let them go.
        if (released) await sql.pruneReruns.run(c.pool, { runId });
        return released;
      });
    },
    async interruptOrphan(runId: string, expectedToken: string, note: string): Promise<boolean> {
      return c.guard(
        async () =>
          (await sql.interruptOrphan.run(c.pool, { runId, token: expectedToken, note })) === 1,
      );
    },
    async markInflight(runId: string, token: string, keys: Key[]): Promise<void> {
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          await c.fence(tx, runId, token, keys);
          await c.mark(tx, runId, keys);
        }),
      );
    },
    async listInflight(runId: string): Promise<Key[]> {
      return c.guard(async () => {
        const rows = await sql.listInflight.rows<{ sample_id: string; epoch: number }>(c.pool, {
          runId,
        });
        return rows.map((row) => ({ sampleId: row.sample_id, epoch: row.epoch }));
      });
    },
  };
}
