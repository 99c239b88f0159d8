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
  // Digits only: Number() would take " 2000" and "0x7d0", and "1e4" as 10000.
  const staleMs = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(staleMs) || staleMs < 1_000) {
    throw new StetError(
      "E_USAGE",
      `STET_STALE_MS must be a whole number of milliseconds ≥ 1000, not "${raw}"`,
    );
  }
  return { staleMs };
}

export { DEFAULT_STALE_MS } from "../engine/owner.js";
