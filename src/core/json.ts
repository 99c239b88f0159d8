import * as z from "zod";

/** Any JSON value. Everything stet stores or exports is JSON. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * JSON with object keys sorted and `undefined` members dropped, so that equal values always
 * serialize to equal bytes. Used for fingerprints and for any bytes we compare.
 *
 * @example canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] }) // '{"a":[2,{"c":4,"d":3}],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  // A string (most samples' input and target) has no keys to sort.
  if (typeof value === "string") return JSON.stringify(value);
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return sortKeys((value as { toJSON: () => unknown }).toJSON());
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== undefined) out[key] = sortKeys(member);
  }
  return out;
}

type Problem = { path: (string | number)[]; message: string };

/**
 * How deeply arrays and objects may nest in a value stet accepts (a dataset row, a solver's
 * output): a row or output is level 1, each array or object inside it one more. Deeper values
 * are refused with a message, where they would otherwise overflow the stack of every walk.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * A JSON value, checked in one walk that copies nothing and reports the failing member's path.
 * (A recursive zod union would rebuild every value it checks: slower than the rest of loading a
 * 100,000-row dataset together.) `undefined` object members are allowed: they
 * are dropped from the canonical JSON as from `JSON.stringify`. Values nested more than
 * `MAX_JSON_DEPTH` levels deep, and circular ones, are refused with what is wrong.
 *
 * @example jsonSchema.parse({ a: [1, "x", null] })
 */
export const jsonSchema = z.custom<Json>().superRefine((value, ctx) => {
  const problem = findNonJson(value, value, []);
  if (problem) ctx.addIssue({ code: "custom", ...problem });
});

/**
 * Whether `value` is one `jsonSchema` accepts, asked without zod (what every attempt's output
 * and journal entry is checked by; the schema words the problem when it is not).
 *
 * @example isJson({ a: [1, "x", null] }) // true
 */
export function isJson(value: unknown): value is Json {
  return findNonJson(value, value, []) === undefined;
}

/**
 * Like `jsonSchema`, for an object of JSON values.
 *
 * @example jsonObjectSchema.parse({ difficulty: "hard" })
 */
export const jsonObjectSchema = z
  .custom<Record<string, Json>>(isPlainObject, { message: "expected an object" })
  .superRefine((value, ctx) => {
    const problem = findNonJson(value, value, []);
    if (problem) ctx.addIssue({ code: "custom", ...problem });
  });

/**
 * The first problem in `value`, or undefined. `path` is the walk's own stack (pushed and popped,
 * so a value that is JSON costs no array per member); a problem gets a copy of it.
 */
function findNonJson(
  value: unknown,
  root: unknown,
  path: (string | number)[],
): Problem | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value)
        ? undefined
        : { path: [...path], message: `${value} is not JSON` };
    case "bigint":
      return {
        path: [...path],
        message: `a BigInt (${value}n) is not JSON; convert it to a number or a string`,
      };
    case "object":
      if (value === null) return undefined;
      if (path.length >= MAX_JSON_DEPTH) return tooDeep(root, [...path]);
      if (Array.isArray(value)) {
        for (let index = 0; index < value.length; index += 1) {
          path.push(index);
          const problem = findNonJson(value[index] as unknown, root, path);
          path.pop();
          if (problem) return problem;
        }
        return undefined;
      }
      if (!isPlainObject(value)) {
        const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? "object";
        return { path: [...path], message: `a ${kind} is not JSON; convert it first` };
      }
      for (const key in value) {
        const member = value[key];
        if (member === undefined) continue;
        path.push(key);
        const problem = findNonJson(member, root, path);
        path.pop();
        if (problem) return problem;
      }
      return undefined;
    case "undefined":
      return {
        path: [...path],
        message: path.length === 0 ? "required" : "undefined is not JSON",
      };
    default:
      return { path: [...path], message: `${typeof value} is not JSON` };
  }
}

/**
 * The problem with a value nested `MAX_JSON_DEPTH` levels deep at `path`: a circular reference
 * (a member that is one of its own enclosing values) or true depth. Walks `path` down from the
 * root once, on this failure path only.
 */
function tooDeep(root: unknown, path: (string | number)[]): Problem {
  const seen = new Set<unknown>([root]);
  let value = root;
  for (let at = 0; at < path.length; at += 1) {
    value = (value as Record<string | number, unknown>)[path[at]!];
    if (seen.has(value)) {
      return {
        path: path.slice(0, at + 1),
        message: "a circular reference to an enclosing value is not JSON",
      };
    }
    seen.add(value);
  }
  return {
    path: [],
    message: `nesting too deep: more than ${MAX_JSON_DEPTH} levels of arrays and objects`,
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * How deeply a whole JSON document stet reads may nest (a ResultSet, a suite, a line of Results
 * JSONL, a backup line, a request body): the values it carries may nest `MAX_JSON_DEPTH` levels,
 * and the document wraps them in a few more (a ResultSet's output sits at level 4, a trajectory
 * step's at level 6).
 */
export const MAX_DOCUMENT_DEPTH = MAX_JSON_DEPTH + 16;

/**
 * Whether a parsed JSON value nests arrays and objects more than `maxDepth` levels deep (the
 * value itself is level 1). `JSON.parse` does not recurse, so it accepts any depth; everything
 * after it that walks the value (schema validators, scanners, `JSON.stringify`) does, and
 * overflows the stack. Every reader of JSON from outside asks this first. The walk stops at
 * `maxDepth`, so it cannot overflow itself.
 *
 * @example nestsTooDeep(JSON.parse("[[[1]]]"), 2) // true
 */
export function nestsTooDeep(value: unknown, maxDepth = MAX_DOCUMENT_DEPTH): boolean {
  return jsonShape(value as Json, maxDepth).tooDeep;
}

/** What one walk of a parsed JSON text finds: its object members and strings, and its depth. */
export interface JsonShape {
  /** Object members, over all objects at every depth. */
  members: number;
  /** String values (not keys). */
  strings: number;
  /** More than `maxDepth` levels of arrays and objects (the walk stopped there). */
  tooDeep: boolean;
}

/**
 * Walks a parsed JSON text once, counting what `mayRepeatKeys` compares with the text and
 * checking its depth (the value itself is level 1). The walk stops at `maxDepth`, so it cannot
 * overflow the stack whatever `JSON.parse` (which does not recurse) accepted.
 *
 * @example jsonShape({ a: ["x", { b: 1 }] }) // { members: 2, strings: 1, tooDeep: false }
 */
export function jsonShape(value: Json, maxDepth = MAX_JSON_DEPTH): JsonShape {
  const shape: JsonShape = { members: 0, strings: 0, tooDeep: false };
  walkShape(value, 1, maxDepth, shape);
  return shape;
}

function walkShape(value: Json, depth: number, maxDepth: number, shape: JsonShape): void {
  if (typeof value === "string") {
    shape.strings += 1;
    return;
  }
  if (value === null || typeof value !== "object") return;
  if (depth > maxDepth) {
    shape.tooDeep = true;
    return;
  }
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length && !shape.tooDeep; index += 1) {
      walkShape(value[index]!, depth + 1, maxDepth, shape);
    }
    return;
  }
  for (const key in value) {
    shape.members += 1;
    walkShape(value[key]!, depth + 1, maxDepth, shape);
    if (shape.tooDeep) return;
  }
}

/**
 * False when `text`, which `JSON.parse` turned into a value of `shape`, certainly has no object
 * with a repeated key (`JSON.parse` keeps the last silently); true when it may, and a scan must
 * tell. Cheap, so that every row can be checked: each member of the text has one `:` outside
 * strings, so as many colons as parsed members proves it. Else (colons inside strings) the
 * text's strings are counted by their quotes: a repeated key is a member, and its key string,
 * that the parsed value lost.
 *
 * @example mayRepeatKeys('{"a":1,"a":2}', jsonShape({ a: 2 })) // true
 */
export function mayRepeatKeys(text: string, shape: JsonShape): boolean {
  let colons = 0;
  for (let at = text.indexOf(":"); at !== -1; at = text.indexOf(":", at + 1)) colons += 1;
  if (colons === shape.members) return false;
  let quotes = 0;
  for (let at = text.indexOf('"'); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 92) backslashes += 1;
    if (backslashes % 2 === 0) quotes += 1;
  }
  return quotes !== 2 * (shape.members + shape.strings);
}
