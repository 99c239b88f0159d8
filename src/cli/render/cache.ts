import type { CacheStats } from "../../store/types.js";
import { formatCount } from "./format.js";

/**
 * The cache's size in a line, as `stet cache stats` and `stet show` print it.
 *
 * @example describeCache({ entries: 2, bytes: 2048, oldest: "…", newest: "…" }) // "reply cache: 2 replies, 2.0 KB, …"
 */
export function describeCache(stats: CacheStats): string {
  if (stats.entries === 0) return "reply cache: empty";
  return (
    `reply cache: ${replies(stats.entries)}, ${(stats.bytes / 1024).toFixed(1)} KB, ` +
    `stored ${stats.oldest ?? "?"} to ${stats.newest ?? "?"}`
  );
}

/** `n` replies, counted. */
export function replies(n: number): string {
  return `${formatCount(n)} ${n === 1 ? "reply" : "replies"}`;
}
