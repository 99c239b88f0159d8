import { createHash, timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "./api-error.js";
import { AuthFailures } from "./auth-failures.js";

/**
 * Middleware that admits only `Authorization: Bearer <token>`. Both sides are hashed first so
 * the comparison takes the same time whatever the presented token's length or content. A client
 * address that failed 10 times within a minute gets 429 `rate_limited` with `Retry-After` until
 * the minute is over, even with the right token, so guessing gains nothing from trying faster.
 *
 * @example app.use("/api/*", bearerAuth(process.env.STET_TOKEN!));
 */
export function bearerAuth(
  token: string,
  failures: AuthFailures = new AuthFailures(),
): MiddlewareHandler {
  const expected = digest(token);
  return async (c, next) => {
    const address = clientAddress(c);
    const waitMs = failures.retryAfterMs(address);
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      c.header("Retry-After", String(seconds));
      throw new ApiError(
        429,
        "rate_limited",
        `too many failed token attempts from this address; try again in ${seconds} s`,
      );
    }
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match?.[1] || !timingSafeEqual(digest(match[1]), expected)) {
      failures.record(address);
      c.header("WWW-Authenticate", 'Bearer realm="stet"');
      throw new ApiError(401, "unauthorized", "a valid Authorization: Bearer <token> is required");
    }
    failures.clear(address);
    await next();
  };
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/**
 * The peer's address as @hono/node-server hands it over (`c.env.incoming`); an in-process
 * `app.request(...)` has none. Forwarded-for headers are not trusted: anyone can send them.
 */
function clientAddress(c: Context): string {
  const env: unknown = c.env;
  const incoming = (env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)
    ?.incoming;
  const address = incoming?.socket?.remoteAddress ?? "in-process";
  // An IPv4 client of a dual-stack socket shows as ::ffff:a.b.c.d.
  return address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
}
