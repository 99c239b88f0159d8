import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { ApiError } from "./api-error.js";

/**
 * Middleware that admits only `Authorization: Bearer <token>`. Both sides are hashed first so
 * the comparison takes the same time whatever the presented token's length or content.
 *
 * @example app.use("/api/*", bearerAuth(process.env.STET_TOKEN!));
 */
export function bearerAuth(token: string): MiddlewareHandler {
  const expected = digest(token);
  return async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match?.[1] || !timingSafeEqual(digest(match[1]), expected)) {
      c.header("WWW-Authenticate", 'Bearer realm="stet"');
      throw new ApiError(401, "unauthorized", "a valid Authorization: Bearer <token> is required");
    }
    await next();
  };
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}
