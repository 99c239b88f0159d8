import type { Context } from "hono";
import * as z from "zod";
import { boundedNumber } from "../core/bounds.js";
import { MAX_DOCUMENT_DEPTH, nestsTooDeep } from "../core/json.js";
import { ApiError } from "./api-error.js";

/**
 * Parses the JSON body with `schema`, or throws a 400 `invalid_request` naming the failing
 * field. An empty body counts as `{}`. A body nested more than `MAX_DOCUMENT_DEPTH` levels deep
 * is refused before the schema walks it.
 *
 * @example const body = await parseBody(c, z.object({ eval: z.string() }));
 */
export async function parseBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  const text = await c.req.text();
  let value: unknown = {};
  if (text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch {
      throw new ApiError(400, "invalid_request", "the request body is not valid JSON");
    }
    if (nestsTooDeep(value)) {
      throw new ApiError(
        400,
        "invalid_request",
        `the request body nests arrays and objects more than ${MAX_DOCUMENT_DEPTH} levels deep`,
      );
    }
  }
  return check(schema, value, "body");
}

/**
 * Parses the query string with `schema` (values arrive as strings: use `z.coerce` for numbers).
 *
 * @example const q = parseQuery(c, z.object({ limit: z.coerce.number().int().optional() }));
 */
export function parseQuery<T>(c: Context, schema: z.ZodType<T>): T {
  return check(schema, c.req.query(), "query");
}

function check<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue && issue.path.length > 0 ? `${where}.${issue.path.join(".")}` : where;
  throw new ApiError(400, "invalid_request", `${path}: ${issue?.message ?? "invalid"}`);
}

/** A spend cap in US dollars (`maxCost` of a start or resume body), within its bound. */
export const maxCostSchema = boundedNumber("maxCost");

/** `limit` (1–500, default 50) and `offset` query parameters. */
export const pagingSchema = z.object({
  limit: z.coerce.number().pipe(boundedNumber("pageLimit")).default(50),
  offset: z.coerce.number().pipe(boundedNumber("pageOffset")).default(0),
});
