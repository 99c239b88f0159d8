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
import type { SqliteContext } from "./context.js";
import { createRun } from "./create-run.js";
import { figuresAfterRescore, rebuildRerunFacts } from "./figures.js";
import { immediate } from "./driver.js";

/** Run records and their ownership (`RunStore`) in SQLite. */
export function sqliteRuns(c: SqliteContext): RunStore {
  return {
    async create(input: NewRun): Promise<Run> {
      return createRun(c, input);
    },
    async get(runId: string): Promise<Run | undefined> {
      return c.guard(() => c.readRun(runId));
    },
    async updateSamples(runId: string, token: string, records: SampleRecord[]): Promise<void> {
      return c.guard(() => {
        checkUniqueSampleIds(records);
        immediate(c.db, () => {
          c.fence(runId, token);
          for (const { sample, fingerprint } of records) {
            const { changes } = c.s.updateSample.run(
              fingerprint,
              JSON.stringify(sample),
              runId,
              sample.id,
            );
            if (changes === 0) throw notInSnapshot(runId, sample.id);
          }
          // A changed sample's outcomes are its attempts for its new content.
          figuresAfterRescore(
            c,
            runId,
            records.map((r) => r.sample.id),
          );
          c.s.touchRun.run(new Date(c.now()).toISOString(), runId);
        });
      });
    },
    async claim(
      runId: string,
      owner: OwnerIdentity,
      expectedToken: string | null,
    ): Promise<boolean> {
      return c.guard(() => {
        const nowMs = c.now();
        const { changes } = c.s.claimRun.run({
          runId,
          expectedToken,
          nowMs,
          now: new Date(nowMs).toISOString(),
          ...ownerParams(owner),
        });
        return changes === 1;
      });
    },
    async heartbeat(runId: string, token: string): Promise<HeartbeatReply> {
      return c.guard(() => {
        const row = c.s.heartbeat.get({ runId, token, nowMs: c.now() });
        if (row) return { owned: true, cancelRequested: row.cancel_requested };
        return immediate(c.db, () => c.leases.heartbeat(runId, token)) ?? { owned: false };
      });
    },
    async requestCancel(runId: string, token: string, note: string): Promise<boolean> {
      return c.guard(() => c.s.requestCancel.run({ runId, token, note }).changes === 1);
    },
    async updateConfig(
      runId: string,
      token: string,
      config: RunConfig,
      reruns?: RerunRecord,
    ): Promise<boolean> {
      checkRunConfig(config);
      const listed = reruns ? checkRerunRecord(reruns) : [];
      return c.guard(() =>
        immediate(c.db, () => {
          const asked = reruns && isAsked(reruns) ? reruns : undefined;
          if (asked && !c.s.figuresBuilt.get({ runId })) throw figuresNotBuilt(runId);
          const now = new Date(c.now()).toISOString();
          const text = JSON.stringify(config);
          if (c.s.updateRunConfig.run({ runId, token, config: text, now }).changes !== 1) {
            return false;
          }
          if (!reruns) return true;
          // Asked: the recorded ones not done stay; else all are replaced.
          if (asked) c.s.pruneReruns.run({ runId });
          else c.s.clearReruns.run({ runId });
          for (let i = 0; i < listed.length; i += RERUN_ROWS_A_STATEMENT) {
            const rows = listed
              .slice(i, i + RERUN_ROWS_A_STATEMENT)
              .map((r) => [r.sampleId, r.epoch, r.after]);
            c.s.insertReruns.run({ runId, rows: JSON.stringify(rows) });
          }
          if (asked) c.s.recordAsked.run({ runId, ...askedFlags(asked.outcomes) });
          rebuildRerunFacts(c, runId);
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
      return c.guard(() => {
        if (status === "running") throw illegalRelease(runId);
        const now = new Date(c.now()).toISOString();
        const released =
          c.s.releaseRun.run({ runId, token, status, note: note ?? null, now }).changes === 1;
        // The re-run requests this owner's work finished are done for good: let them go.
        if (released) c.s.pruneReruns.run({ runId });
        return released;
      });
    },
    async interruptOrphan(runId: string, expectedToken: string, note: string): Promise<boolean> {
      return c.guard(() => {
        const now = new Date(c.now()).toISOString();
        return c.s.interruptOrphan.run({ runId, token: expectedToken, note, now }).changes === 1;
      });
    },
    async markInflight(runId: string, token: string, keys: Key[]): Promise<void> {
      return c.guard(() =>
        immediate(c.db, () => {
          c.fence(runId, token, keys);
          for (const key of keys) {
            c.requireSample(runId, key.sampleId);
            c.s.markInflight.run(runId, key.sampleId, key.epoch);
          }
        }),
      );
    },
    async listInflight(runId: string): Promise<Key[]> {
      return c.guard(() =>
        c.s.listInflight.all(runId).map((row) => ({ sampleId: row.sample_id, epoch: row.epoch })),
      );
    },
  };
}
