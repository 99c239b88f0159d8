import { describeBound, parseBounded } from "../core/bounds.js";
import { StetError } from "../core/errors.js";

/**
 * `STET_STALE_MS`: how old another host's heartbeat must be before its run counts as dead
 * (default 30 s). Same-host owners are judged by their pid at once, whatever this says.
 *
 * @example staleLimit({ STET_STALE_MS: "10000" }) // { staleMs: 10000 }
 */
export function staleLimit(env: Readonly<Record<string, string | undefined>> = process.env): {
  staleMs?: number;
} {
  const raw = env.STET_STALE_MS;
  if (raw === undefined || raw === "") return {};
  const staleMs = parseBounded("staleMs", raw);
  if (staleMs === undefined) {
    throw new StetError(
      "E_USAGE",
      `STET_STALE_MS must be ${describeBound("staleMs")}, not "${raw}"`,
    );
  }
  return { staleMs };
}

export { DEFAULT_STALE_MS } from "../engine/owner.js";
