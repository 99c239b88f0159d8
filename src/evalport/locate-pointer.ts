import type { Node } from "jsonc-parser";
import { lineAndColumn } from "../core/json-text.js";

/**
 * Where the value at a JSON Pointer starts in the text `root` was parsed from (1-based line and
 * column), or where its nearest existing ancestor starts: an error about a missing property
 * points at the object that lacks it. Undefined when the text has no tree (it was not JSON).
 *
 * @example locatePointer(parseTree(text), text, "/results/0/passed") // { line: 14, column: 17 }
 */
export function locatePointer(
  root: Node | undefined,
  text: string,
  pointer: string,
): { line: number; column: number } | undefined {
  if (!root) return undefined;
  let node = root;
  const segments = pointer === "" ? [] : pointer.split("/").slice(1).map(unescape);
  for (const segment of segments) {
    const next = child(node, segment);
    if (!next) break;
    node = next;
  }
  return lineAndColumn(text, node.offset);
}

function child(node: Node, segment: string): Node | undefined {
  if (node.type === "array") {
    return /^(0|[1-9]\d*)$/.test(segment) ? node.children?.[Number(segment)] : undefined;
  }
  if (node.type !== "object") return undefined;
  // The last of repeated keys, as JSON.parse keeps it.
  const property = node.children?.findLast((p) => p.children?.[0]?.value === segment);
  return property?.children?.[1];
}

function unescape(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}
