import type { Key, RunStatus } from "../../core/types.js";
import { illegalRelease, invalidInput } from "../checks.js";
import type {
  LeaseClaim,
  LeaseStore,
  RunNote,
  WorkerIdentity,
  WorkerRecord,
  WorkerState,
} from "../types.js";
import type { SqliteContext } from "./context.js";
import { immediate } from "./driver.js";

/** Workers and key leases of distributed runs (`LeaseStore`) in SQLite. */
export function sqliteLeases(c: SqliteContext): LeaseStore {
  return {
    async register(runId: string, worker: WorkerIdentity): Promise<void> {
      return c.guard(() => {
        const run = c.requireRun(runId);
        if (!run.config.distributed) throw invalidInput(`run ${runId} is not a distributed run`);
        c.leases.register(runId, worker);
      });
    },
    async claim(
      runId: string,
      token: string,
      limit: number,
      options?: { count?: boolean },
    ): Promise<LeaseClaim> {
      const count = options?.count !== false;
      return c.guard(() => immediate(c.db, () => c.leases.claim(runId, token, limit, count)));
    },
    async settle(runId: string, token: string, keys: readonly Key[]): Promise<void> {
      return c.guard(() =>
        immediate(c.db, () => {
          c.fence(runId, token, keys);
          c.leases.finish(runId, token, keys);
        }),
      );
    },
    async leave(
      runId: string,
      token: string,
      state: Exclude<WorkerState, "active">,
    ): Promise<void> {
      return c.guard(() => immediate(c.db, () => c.leases.leave(runId, token, state)));
    },
    async expire(runId: string, token: string): Promise<number> {
      return c.guard(() => immediate(c.db, () => c.leases.expire(runId, token)));
    },
    async list(runId: string): Promise<WorkerRecord[]> {
      return c.guard(() => c.leases.list(runId));
    },
    async reopen(runId: string): Promise<boolean> {
      return c.guard(() => immediate(c.db, () => c.leases.reopen(runId)));
    },
    async requestCancel(runId: string, note: string): Promise<boolean> {
      return c.guard(() => c.leases.cancel(runId, note));
    },
    async closeRun(runId: string, status: RunStatus, note?: RunNote): Promise<boolean> {
      return c.guard(() => {
        if (status === "running") throw illegalRelease(runId);
        if (typeof note !== "function") return c.leases.close(runId, status, note ?? null);
        // The spend is read under the write lock the close takes: no commit comes between them.
        return immediate(c.db, () => {
          const spent = c.read.readSpend(runId, undefined);
          return c.leases.close(runId, status, note(spent));
        });
      });
    },
  };
}
