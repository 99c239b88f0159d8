import { StetError } from "../core/errors.js";
import { redactPassword } from "../store/postgres/driver.js";

/** The default store: a SQLite file in the working directory. */
export const DEFAULT_STORE = ".stet/stet.db";

/** `scheme://` at the start of a location: a URL, not a file path. */
const URL_SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/**
 * `--store`, else `STET_STORE`, else `.stet/stet.db` in the working directory, checked: an empty
 * location (the flag or the variable set to nothing) and a URL of any scheme but `postgres://`
 * or `postgresql://` are usage errors naming where the value came from, instead of a SQLite
 * file called `mysql:` or the default store picked silently.
 *
 * @example storeLocation(undefined) // ".stet/stet.db" (STET_STORE unset)
 * @example storeLocation("mysql://db/x") // throws E_USAGE: `--store "mysql://db/x": … not supported …`
 */
export function storeLocation(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (flag !== undefined) return checkedLocation(flag, "--store");
  if (env.STET_STORE !== undefined) return checkedLocation(env.STET_STORE, "STET_STORE");
  return DEFAULT_STORE;
}

/** Whether a store location names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

function checkedLocation(location: string, source: "--store" | "STET_STORE"): string {
  if (location.trim() === "") {
    throw new StetError(
      "E_USAGE",
      `${source} ${JSON.stringify(location)} is empty: give a SQLite file path or a postgres:// URL` +
        (source === "STET_STORE" ? `, or unset STET_STORE for ${DEFAULT_STORE}` : ""),
    );
  }
  const scheme = URL_SCHEME.exec(location)?.[1];
  if (scheme !== undefined && !isPostgresUrl(location)) {
    throw new StetError(
      "E_USAGE",
      `${source} ${JSON.stringify(redactPassword(location))}: ${scheme}:// is not a supported store; ` +
        `give a SQLite file path (such as ${DEFAULT_STORE}) or a postgres:// or postgresql:// URL`,
    );
  }
  return location;
}
