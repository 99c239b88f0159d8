import { expect } from "vitest";
import { draft, owner, runConfig, sampleRecords } from "../../src/store/contract/fixtures.js";
import { requireLeases, type Store, type WorkerIdentity } from "../../src/store/types.js";

/** What `seedDistributedRun` left in the store. */
export interface SeededRun {
  runId: string;
  /** Still active: claimed 3 keys, committed 2. */
  active: WorkerIdentity;
  /** Left (finished): claimed 2 keys, committed 1, and had 1 write refused by the lease fence. */
  left: WorkerIdentity;
  /** An ordinary run beside it, completed by its owner. */
  ordinaryId: string;
}

/**
 * A running distributed run of 6 keys, through the store API as workers would leave it: two
 * workers joined, claimed leases and committed attempts (3 keys done), one of them left. Beside
 * it, an ordinary completed run.
 *
 * @example const { runId, active, left } = await seedDistributedRun(store);
 */
export async function seedDistributedRun(store: Store, runId = "r_dist"): Promise<SeededRun> {
  const ids = ["s0", "s1", "s2", "s3", "s4", "s5"];
  const created = await store.runs.create({
    id: runId,
    config: runConfig({ distributed: true, epochs: 1 }),
    samples: sampleRecords(ids),
    owner: owner("creator"),
  });
  // A distributed run has no owner while its workers hold leases.
  await store.runs.release(runId, created.owner!.token, "interrupted");
  expect(await requireLeases(store).reopen(runId)).toBe(true);

  const active = { ...owner("alpha"), concurrency: 4, leaseMs: 60_000 };
  const left = { ...owner("beta"), concurrency: 2, leaseMs: 60_000 };
  await requireLeases(store).register(runId, active);
  await requireLeases(store).register(runId, left);
  const a = (await requireLeases(store).claim(runId, active.token, 3)).keys;
  const b = (await requireLeases(store).claim(runId, left.token, 2)).keys;
  await store.attempts.record(runId, active.token, [draft(a[0]!), draft(a[1]!)]);
  await store.attempts.record(runId, left.token, [draft(b[0]!)]);
  // A write of a key leased to the other worker: refused, and counted on the writer.
  await expect(store.attempts.record(runId, left.token, [draft(a[2]!)])).rejects.toMatchObject({
    code: "E_FENCED",
  });
  await requireLeases(store).leave(runId, left.token, "finished");

  const ordinaryId = `${runId}_plain`;
  const plain = await store.runs.create({
    id: ordinaryId,
    config: runConfig({ epochs: 1 }),
    samples: sampleRecords(["p0"]),
    owner: owner("plain"),
  });
  await store.attempts.record(ordinaryId, plain.owner!.token, [
    draft({ sampleId: "p0", epoch: 1 }),
  ]);
  await store.runs.release(ordinaryId, plain.owner!.token, "completed");
  return { runId, active, left, ordinaryId };
}
