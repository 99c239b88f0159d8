import { createHash } from "node:crypto";
import { watch, readFileSync, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";

/** Each watched file's content as it was read (a hash; null when it could not be read). */
export type FileContents = Map<string, string | null>;

/** How long a file must stay quiet after an event before it is read: one save, one change. */
export const SETTLE_MS = 150;

/** The files' contents now (sha256 of their bytes; null for a file that is missing). */
export function readContents(files: Iterable<string>): FileContents {
  const contents: FileContents = new Map();
  for (const file of files) {
    try {
      contents.set(file, createHash("sha256").update(readFileSync(file)).digest("hex"));
    } catch {
      contents.set(file, null);
    }
  }
  return contents;
}

/** The files whose contents differ from `before`, sorted. */
export function changedFiles(before: FileContents): string[] {
  const now = readContents(before.keys());
  return [...before.keys()].filter((file) => now.get(file) !== before.get(file)).sort();
}

/**
 * Resolves with the files that changed since `before` was read, once one did and events have
 * been quiet for `SETTLE_MS` (an editor's save is often several events: a truncate and a write,
 * or a write to a temporary file and a rename over the original), or with null when `stop` is
 * aborted first. The folders are watched rather than the files, so a file replaced by a rename
 * (as many editors save) is still seen; an event whose file reads as before is ignored, and a
 * change made before the watch began is found by the first comparison.
 */
export function waitForChange(before: FileContents, stop: AbortSignal): Promise<string[] | null> {
  return new Promise((resolve) => {
    const names = new Set([...before.keys()].map((file) => basename(file)));
    const watchers: FSWatcher[] = [];
    let timer: NodeJS.Timeout | undefined;
    const finish = (changed: string[] | null) => {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
      stop.removeEventListener("abort", onStop);
      resolve(changed);
    };
    const onStop = () => finish(null);
    const settle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        const changed = changedFiles(before);
        if (changed.length > 0) finish(changed);
      }, SETTLE_MS);
    };
    if (stop.aborted) return finish(null);
    stop.addEventListener("abort", onStop);
    for (const dir of new Set([...before.keys()].map((file) => dirname(file)))) {
      try {
        const watcher = watch(dir, (_event, name) => {
          if (name === null || names.has(basename(name))) settle();
        });
        watcher.on("error", settle);
        watchers.push(watcher);
      } catch {
        // A folder that does not exist (a dataset not written yet) has nothing to watch.
      }
    }
    settle();
  });
}
