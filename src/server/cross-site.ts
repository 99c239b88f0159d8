import type { Context, MiddlewareHandler } from "hono";
import { requestHost } from "./allowed-hosts.js";
import { ApiError } from "./api-error.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const JSON_TYPE = /^application\/json[ \t]*(;|$)/i;

/** The host:port of an `Origin` or `Referer` value (default ports left out, as in `Host`). */
function hostOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.host : undefined;
  } catch {
    return undefined;
  }
}

/** The page that sent a request, by its `Origin`, else its `Referer`; undefined: neither. */
function sender(c: Context): { header: string; value: string } | undefined {
  const origin = c.req.header("origin");
  if (origin !== undefined) return { header: "Origin", value: origin };
  const referer = c.req.header("referer");
  if (referer !== undefined) return { header: "Referer", value: referer };
  return undefined;
}

/** A body is announced by a non-zero Content-Length or by Transfer-Encoding (chunked). */
function hasBody(c: Context): boolean {
  const length = c.req.header("content-length");
  return (
    c.req.header("transfer-encoding") !== undefined || (length !== undefined && length !== "0")
  );
}

/**
 * Middleware for state-changing requests (anything but GET, HEAD, OPTIONS):
 *
 * - a page of another origin may not send them: an `Origin` (or, without one, a `Referer`)
 *   whose host:port is not the request's `Host` gets 403 `cross_origin` (the Host itself is
 *   checked by hostGuard). Clients that send neither (curl, scripts) are not browsers acting
 *   for another site and pass;
 * - a body must be `application/json`: text/plain, form and multipart bodies, which any page can
 *   send without a CORS preflight, get 415 `unsupported_media_type`. A request with no body and
 *   no Content-Type passes (resume and cancel need none; a start without a body is a 400).
 *
 * @example app.use("/api/*", crossSiteGuard());
 */
export function crossSiteGuard(): MiddlewareHandler {
  return async (c, next) => {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const from = sender(c);
    if (from && hostOf(from.value) !== requestHost(c).toLowerCase()) {
      throw new ApiError(
        403,
        "cross_origin",
        `${c.req.method} requests from another origin are refused (${from.header}: ${from.value.slice(0, 200)})`,
      );
    }
    const type = c.req.header("content-type");
    if ((type !== undefined || hasBody(c)) && !JSON_TYPE.test(type ?? "")) {
      throw new ApiError(
        415,
        "unsupported_media_type",
        `request bodies must be Content-Type: application/json (got ${type === undefined ? "none" : JSON.stringify(type.slice(0, 100))})`,
      );
    }
    await next();
  };
}
