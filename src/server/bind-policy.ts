import { StetError } from "../core/errors.js";

/** The shortest `STET_TOKEN` a server reachable from other machines accepts. */
export const MIN_TOKEN_LENGTH = 32;

/**
 * True for addresses only this machine can reach.
 *
 * @example isLoopback("127.0.0.1") // true; isLoopback("0.0.0.0") // false
 */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
}

const MAKE_ONE = "make one with: export STET_TOKEN=$(openssl rand -hex 32)";

/**
 * Binding anything but loopback requires a bearer token (STET_TOKEN) of at least 32 characters,
 * since every machine that reaches the port may guess at it. The messages never contain the token.
 *
 * @example assertBindable("0.0.0.0", undefined) // throws E_CONFIG
 */
export function assertBindable(host: string, token: string | undefined): void {
  if (isLoopback(host)) return;
  if (!token) {
    throw new StetError(
      "E_CONFIG",
      `binding ${host} exposes the API beyond this machine; set STET_TOKEN to require a bearer token (${MAKE_ONE})`,
    );
  }
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new StetError(
      "E_CONFIG",
      `STET_TOKEN is ${token.length} characters long; binding ${host} needs one of at least ${MIN_TOKEN_LENGTH} (${MAKE_ONE})`,
    );
  }
}
