import type { Migration } from "./types.js";

/**
 * SQLite migration 19 (PostgreSQL 18): a worker's leases indexed only while open. Every statement
 * that finds a worker's leases by its token asks for the open ones (`done = 0`: the fence of its
 * writes, the end of its keys, its heartbeat, its leaving), but the index held every lease the
 * worker ever took, so each of them read all of those: on PostgreSQL a 200,000-key distributed run
 * spent 10 ms a commit on it by the end (the planner, whose statistics saw no token at the first
 * claim, took this index for every such statement), quadratic over the run.
 */
export function openLeasesMigration(version: number): Migration {
  return {
    version,
    name: "open-leases-by-token",
    sql: `
DROP INDEX leases_by_token;
CREATE INDEX leases_by_token ON leases (token) WHERE done = 0;
`,
  };
}
