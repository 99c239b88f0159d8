import { EXIT } from "../exit-codes.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { describeCache, replies } from "../render/cache.js";

export interface CacheFlags {
  store?: string;
  json?: boolean;
  /** `prune`: the age in days of the replies to delete (default 30). */
  olderThan?: number;
}

const DAY_MS = 86_400_000;

/**
 * `stet cache stats | prune | clear`: what the store's reply cache holds, deleting the replies
 * older than an age, or all of them. Runs, attempts and journals are untouched: a hit a run
 * already journaled replays from its journal.
 */
export async function cacheCommand(
  action: "stats" | "prune" | "clear",
  flags: CacheFlags,
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const store = await openStore(flags.store, { create: false });
  try {
    if (action === "stats") {
      const stats = await store.cache.stats();
      if (flags.json) io.stdout.write(`${JSON.stringify(stats)}\n`);
      else io.say(describeCache(stats));
      return EXIT.ok;
    }
    const days = flags.olderThan ?? 30;
    const removed =
      action === "clear"
        ? await store.cache.clear()
        : await store.cache.prune(new Date(Date.now() - days * DAY_MS).toISOString());
    if (flags.json) io.stdout.write(`${JSON.stringify({ removed })}\n`);
    else
      io.say(
        `${action === "clear" ? "cleared" : "pruned"} ${replies(removed)}` +
          (action === "prune" ? ` stored more than ${days} day(s) ago` : ""),
      );
    return EXIT.ok;
  } finally {
    await store.close();
  }
}
