import type { Key, RunStatus } from "../../core/types.js";
import { illegalRelease, invalidInput } from "../checks.js";
import { SPEND_START } from "../spend-rows.js";
import type {
  LeaseClaim,
  LeaseStore,
  RunNote,
  WorkerIdentity,
  WorkerRecord,
  WorkerState,
} from "../types.js";
import type { PostgresContext } from "./context.js";
import { transaction } from "./driver.js";
import { postgresLeases as leases } from "./lease-queries.js";
import { postgresReadModel } from "./read-queries.js";
import { postgresStatements as sql } from "./statements.js";

/** Workers and key leases of distributed runs (`LeaseStore`) in PostgreSQL. */
export function postgresLeaseStore(c: PostgresContext): LeaseStore {
  return {
    async register(runId: string, worker: WorkerIdentity): Promise<void> {
      return c.guard(async () => {
        const run = await c.requireRun(c.pool, runId);
        if (!run.config.distributed) throw invalidInput(`run ${runId} is not a distributed run`);
        await leases.register(c.pool, runId, worker);
      });
    },
    async claim(
      runId: string,
      token: string,
      limit: number,
      options?: { count?: boolean },
    ): Promise<LeaseClaim> {
      const count = options?.count !== false;
      return c.guard(async () => {
        // Without statistics on the leases (a large run's, just created) a claim sorted every open
        // lease of the run: 68 ms a claim at 200,000, quadratic over the run.
        await c.plannerStats.check(c.pool, "leases", runId);
        return transaction(c.pool, (tx) => leases.claim(tx, runId, token, limit, count));
      });
    },
    async settle(runId: string, token: string, keys: readonly Key[]): Promise<void> {
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          // Fenced by the keys' leases alone, as a worker's commit is first (the lease rows, then
          // the worker's row in `finish`), never the run's row: a commit takes that last, so a
          // settle that held it waited on the commit's worker row while the commit waited on it
          // (a deadlock, the settle refused and its lease left open).
          if (!(await c.fenceWorker(tx, runId, token, keys))) await c.fence(tx, runId, token, keys);
          await leases.finish(tx, runId, token, keys);
        }),
      );
    },
    async leave(
      runId: string,
      token: string,
      state: Exclude<WorkerState, "active">,
    ): Promise<void> {
      return c.guard(() => transaction(c.pool, (tx) => leases.leave(tx, runId, token, state)));
    },
    async expire(runId: string, token: string): Promise<number> {
      return c.guard(() => transaction(c.pool, (tx) => leases.expire(tx, runId, token)));
    },
    async list(runId: string): Promise<WorkerRecord[]> {
      return c.guard(() => leases.list(c.pool, runId));
    },
    async reopen(runId: string): Promise<boolean> {
      return c.guard(() => transaction(c.pool, (tx) => leases.reopen(tx, runId)));
    },
    async requestCancel(runId: string, note: string): Promise<boolean> {
      return c.guard(() => leases.cancel(c.pool, runId, note));
    },
    async closeRun(runId: string, status: RunStatus, note?: RunNote): Promise<boolean> {
      if (status === "running") throw illegalRelease(runId);
      if (typeof note !== "function") {
        return c.guard(() => leases.close(c.pool, runId, status, note ?? null));
      }
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          // Every commit to the run takes its row lock before it inserts: with the lock held, the
          // spend read is the run's last (a worker that commits after it still holds a live lease,
          // and then the close changes nothing).
          await sql.lockOwner.run(tx, { runId });
          const spent = await postgresReadModel.readSpend(tx, runId, SPEND_START);
          return leases.close(tx, runId, status, note(spent));
        }),
      );
    },
  };
}
