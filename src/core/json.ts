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
 * A JSON value, checked in one walk that copies nothing and reports the failing member's path.
 * (A recursive zod union would rebuild every value it checks: slower than the rest of loading a
 * 100,000-row dataset together.) `undefined` object members are allowed: they
 * are dropped from the canonical JSON as from `JSON.stringify`.
 *
 * @example jsonSchema.parse({ a: [1, "x", null] })
 */
export const jsonSchema = z.custom<Json>().superRefine((value, ctx) => {
  const problem = findNonJson(value, []);
  if (problem) ctx.addIssue({ code: "custom", ...problem });
});

/**
 * Like `jsonSchema`, for an object of JSON values.
 *
 * @example jsonObjectSchema.parse({ difficulty: "hard" })
 */
export const jsonObjectSchema = z
  .custom<Record<string, Json>>(isPlainObject, { message: "expected an object" })
  .superRefine((value, ctx) => {
    const problem = findNonJson(value, []);
    if (problem) ctx.addIssue({ code: "custom", ...problem });
  });

function findNonJson(value: unknown, path: (string | number)[]): Problem | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : { path, message: `${value} is not JSON` };
    case "object":
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        for (let index = 0; index < value.length; index += 1) {
          const problem = findNonJson(value[index] as unknown, [...path, index]);
          if (problem) return problem;
        }
        return undefined;
      }
      if (!isPlainObject(value)) {
        const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? "object";
        return { path, message: `a ${kind} is not JSON; convert it first` };
      }
      for (const key in value) {
        const member = value[key];
        const problem = member === undefined ? undefined : findNonJson(member, [...path, key]);
        if (problem) return problem;
      }
      return undefined;
    case "undefined":
      return { path, message: path.length === 0 ? "required" : "undefined is not JSON" };
    default:
      return { path, message: `${typeof value} is not JSON` };
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
