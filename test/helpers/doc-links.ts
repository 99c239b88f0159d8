import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";

/** A Markdown page's text without its fenced blocks and code spans (links there are not links). */
function prose(text: string): string[] {
  let fence: string | undefined;
  return text.split("\n").map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker.startsWith(fence)) fence = undefined;
      return "";
    }
    if (marker !== undefined) {
      fence = marker;
      return "";
    }
    return line.replace(/(`+)[^`]*?\1/g, "");
  });
}

/**
 * GitHub's heading anchors: lower-cased, punctuation dropped (letters, digits, `-`, `_` and
 * spaces kept), each space a `-`; a repeated heading gets `-1`, `-2`, ….
 */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  let fence: string | undefined;
  for (const line of text.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker.startsWith(fence)) fence = undefined;
      continue;
    }
    if (marker !== undefined) fence = marker;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  return slugs;
}

/** A relative link or anchor that does not resolve: where it is and why. */
export interface BrokenLink {
  page: string;
  line: number;
  target: string;
  reason: string;
}

/** Every relative link of a page that names a missing file or a missing heading anchor. */
export function brokenLinks(repo: string, path: string): BrokenLink[] {
  const page = relative(repo, path);
  const broken: BrokenLink[] = [];
  prose(readFileSync(path, "utf8")).forEach((line, index) => {
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      const reason = unresolved(repo, path, target);
      if (reason !== undefined) broken.push({ page, line: index + 1, target, reason });
    }
  });
  return broken;
}

function unresolved(repo: string, from: string, target: string): string | undefined {
  const [file = "", anchor] = target.split("#", 2);
  const resolved = file === "" ? from : join(dirname(from), decodeURIComponent(file));
  if (!existsSync(resolved)) return `no file ${relative(repo, resolved)}`;
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) {
    return `an anchor into ${relative(repo, resolved)}, which has no headings`;
  }
  const slugs = anchors(readFileSync(resolved, "utf8"));
  return slugs.has(decodeURIComponent(anchor).toLowerCase())
    ? undefined
    : `no heading #${anchor} in ${relative(repo, resolved)}`;
}
