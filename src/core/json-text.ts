import { visit } from "jsonc-parser";

/** A place in a JSON text: the UTF-16 offset, and the 1-based line and column. */
export interface TextPosition {
  offset: number;
  line: number;
  column: number;
}

/**
 * The first key an object of a valid JSON text repeats (`JSON.parse` keeps the last value
 * silently), at the repetition, with the JSON Pointer of the member. A full scan: run it when
 * `mayRepeatKeys` says it must.
 *
 * @example findRepeatedKey('{"a": 1,\n "a": 2}') // { key: "a", pointer: "/a", offset: 10, line: 2, column: 2 }
 */
export function findRepeatedKey(
  text: string,
): (TextPosition & { key: string; pointer: string }) | undefined {
  const open: Set<string>[] = [];
  let found: (TextPosition & { key: string; pointer: string }) | undefined;
  visit(
    text,
    {
      onObjectBegin: () => {
        open.push(new Set());
      },
      onObjectEnd: () => {
        open.pop();
      },
      onObjectProperty: (key, offset, _length, line, column, path) => {
        const keys = open[open.length - 1]!;
        if (found === undefined && keys.has(key)) {
          const pointer = [...path(), key].map((p) => `/${escapePointer(String(p))}`).join("");
          found = { key, pointer, offset, line: line + 1, column: column + 1 };
        }
        keys.add(key);
      },
    },
    { disallowComments: true, allowTrailingComma: false },
  );
  return found;
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

/**
 * Where a JSON text first opens an array or object at level `maxDepth + 1` (the outermost is
 * level 1), or undefined. Iterative, so that any depth can be scanned; any text can be, valid
 * JSON or not (the brackets outside strings are counted, an unterminated string ends the scan),
 * so a scanner that recurses per level may run on a text only after this said undefined.
 *
 * @example findTooDeep("[[[1]]]", 2) // { offset: 2, line: 1, column: 3 }
 */
export function findTooDeep(text: string, maxDepth: number): TextPosition | undefined {
  let depth = 0;
  for (let at = 0; at < text.length; at += 1) {
    const char = text.charCodeAt(at);
    if (char === 34 /* " */) {
      for (at += 1; at < text.length && text.charCodeAt(at) !== 34; at += 1) {
        if (text.charCodeAt(at) === 92) at += 1;
      }
    } else if (char === 91 /* [ */ || char === 123 /* { */) {
      depth += 1;
      if (depth > maxDepth) return { offset: at, ...lineAndColumn(text, at) };
    } else if (char === 93 /* ] */ || char === 125 /* } */) {
      depth -= 1;
    }
  }
  return undefined;
}

/**
 * The 1-based line and column (in UTF-16 units) of `offset` in `text`.
 *
 * @example lineAndColumn("a\nbc", 3) // { line: 2, column: 2 }
 */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let at = text.indexOf("\n"); at !== -1 && at < offset; at = text.indexOf("\n", at + 1)) {
    line += 1;
    start = at + 1;
  }
  return { line, column: offset - start + 1 };
}
