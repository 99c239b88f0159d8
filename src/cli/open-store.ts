import { resolve } from "node:path";
import { StetError } from "../core/errors.js";
import { openSqliteStore } from "../store/sqlite.js";
import type { Store } from "../store/types.js";

/** `--store`, else `STET_STORE`, else `.stet/stet.db` in the working directory. */
export function storeLocation(flag: string | undefined): string {
  return flag ?? process.env.STET_STORE ?? ".stet/stet.db";
}

/** Opens the store the user selected. The composition root: the only place that picks an adapter. */
export function openStore(flag: string | undefined): Store {
  const location = storeLocation(flag);
  if (/^postgres(ql)?:\/\//.test(location)) {
    throw new StetError(
      "E_CONFIG",
      "PostgreSQL stores are not supported yet; use a SQLite file path",
    );
  }
  try {
    return openSqliteStore(resolve(location));
  } catch (error) {
    throw new StetError(
      "E_STORE",
      `cannot open the store at ${location}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}
