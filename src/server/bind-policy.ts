import { StetError } from "../core/errors.js";

/**
 * True for addresses only this machine can reach.
 *
 * @example isLoopback("127.0.0.1") // true; isLoopback("0.0.0.0") // false
 */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Binding anything but loopback requires a bearer token (STET_TOKEN).
 *
 * @example assertBindable("0.0.0.0", undefined) // throws E_CONFIG
 */
export function assertBindable(host: string, token: string | undefined): void {
  if (!isLoopback(host) && !token) {
    throw new StetError(
      "E_CONFIG",
      `binding ${host} exposes the API beyond this machine; set STET_TOKEN to require a bearer token`,
    );
  }
}
