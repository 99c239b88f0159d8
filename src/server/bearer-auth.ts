import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth as honoBearerAuth } from "hono/bearer-auth";
import { StetError } from "../core/errors.js";
import { ApiError } from "./api-error.js";

/** RFC 6750's token characters: hono's bearerAuth answers any other token as a malformed header. */
const BEARER_TOKEN = /^[A-Za-z0-9._~+/-]+=*$/;

/**
 * hono's bearerAuth (SHA-256 digests compared in constant time), refusing as the rest of the API
 * does: a missing, malformed or wrong `Authorization: Bearer <token>` is the app's 401
 * `unauthorized` error, thrown to its onError, with `WWW-Authenticate: Bearer realm="stet"`.
 *
 * @example app.use("/api/*", bearerAuth(process.env.STET_TOKEN!));
 */
export function bearerAuth(token: string): MiddlewareHandler {
  if (!BEARER_TOKEN.test(token)) {
    throw new StetError(
      "E_CONFIG",
      "the bearer token (STET_TOKEN) may hold only letters, digits and - . _ ~ + / followed by any '=' (RFC 6750)",
    );
  }
  const refuse = {
    message: (c: Context): never => {
      c.header("WWW-Authenticate", 'Bearer realm="stet"');
      throw new ApiError(401, "unauthorized", "a valid Authorization: Bearer <token> is required");
    },
  };
  return honoBearerAuth({
    token,
    noAuthenticationHeader: refuse,
    invalidAuthenticationHeader: refuse,
    invalidToken: refuse,
  });
}
