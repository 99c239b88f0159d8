import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";

/**
 * The UI's policy, sent on every response (a JSON body executes nothing, so one policy serves
 * all): its page, script and stylesheet come from this server and nothing is inline; it talks
 * only to this server (fetch and SSE over fetch); `data:` images are the page's empty favicon;
 * no page may frame it.
 */
const CONTENT_SECURITY_POLICY = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", "data:"],
  connectSrc: ["'self'"],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};

/**
 * Middleware that adds the security headers to every response, errors included:
 * `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY`,
 * the Content-Security-Policy above, and hono's other defaults (Cross-Origin-Resource-Policy and
 * -Opener-Policy `same-origin`, …). No HSTS: the server speaks plain HTTP, and a proxy in front
 * of it that terminates TLS is the one to say so.
 *
 * @example app.use("*", securityHeaders());
 */
export function securityHeaders(): MiddlewareHandler {
  return secureHeaders({
    contentSecurityPolicy: CONTENT_SECURITY_POLICY,
    xFrameOptions: "DENY",
    strictTransportSecurity: false,
  });
}
