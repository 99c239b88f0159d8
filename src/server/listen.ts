import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { StetError } from "../core/errors.js";

export interface Listening {
  /** Base URL, e.g. http://127.0.0.1:7777 (the real port when 0 was asked for). */
  url: string;
  port: number;
  /**
   * Stops accepting connections, lets open responses (a stream's last events) finish for up to
   * `drainMs` (default 2 s), then cuts whatever is still open (e.g. a follower of another run).
   */
  close(drainMs?: number): Promise<void>;
}

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

/**
 * Binds `app` to `host:port` (port 0: any free port) and resolves once it listens.
 *
 * @example const { url, close } = await listen(createApp({ store }), { host: "127.0.0.1", port: 0 });
 */
export function listen(app: Hono, options: { host: string; port: number }): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const server = serve({
      fetch: app.fetch,
      hostname: options.host,
      port: options.port,
    }) as Server;
    server.once("error", (cause) =>
      reject(
        new StetError(
          "E_CONFIG",
          `cannot listen on ${options.host}:${options.port}: ${cause.message}`,
          {
            cause,
          },
        ),
      ),
    );
    server.once("listening", () => {
      const { port } = server.address() as AddressInfo;
      const host = options.host.includes(":") ? `[${options.host}]` : options.host;
      resolve({
        url: `http://${host}:${port}`,
        port,
        close: (drainMs = 2_000) =>
          new Promise<void>((done) => {
            const cut = setTimeout(() => server.closeAllConnections(), drainMs);
            server.close(() => {
              clearTimeout(cut);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
