import { StetError } from "../core/errors.js";
import type { LeaseStore, Store } from "./types.js";

/**
 * The store's lease capability, for a path that starts or joins distributed work: a store
 * without it is refused with `E_CONFIG` naming it, before anything is written.
 *
 * @example await requireLeases(store).register(runId, worker);
 */
export function requireLeases(store: Pick<Store, "leases" | "location">): LeaseStore {
  if (store.leases) return store.leases;
  throw new StetError(
    "E_CONFIG",
    `store ${store.location} cannot hold distributed runs (it has no workers or leases): ` +
      "run without --distributed, or use a SQLite or PostgreSQL store",
  );
}
