import { StetError } from "../../core/errors.js";
import type { Migration } from "./types.js";

/**
 * Refuses a store whose recorded schema version is past the last migration this stet ships:
 * a newer stet wrote it, and this one would misread it.
 *
 * @example refuseNewerSchema(3, SQLITE_MIGRATIONS); // throws E_STORE when only 1..2 are known
 */
export function refuseNewerSchema(stored: number, migrations: readonly Migration[]): void {
  const known = migrations.at(-1)?.version ?? 0;
  if (stored > known) {
    throw new StetError(
      "E_STORE",
      `the store's schema (version ${stored}) is newer than this stet knows (version ${known}); upgrade stet`,
    );
  }
}
