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
 * Connection limits, so slow or idle clients cannot pile up: a new connection has `headersMs` to
 * start a request and the request as long to send its headers, `requestMs` to send all of it (a
 * body is at most 1 MiB); an idle kept-alive connection closes after `keepAliveMs`; past
 * `maxConnections` new connections are dropped. None of them cuts a response: an event stream
 * stays open as long as its client does.
 */
export interface ConnectionLimits {
  headersMs: number;
  requestMs: number;
  keepAliveMs: number;
  maxConnections: number;
  /** How often Node looks for requests past headersMs/requestMs (its default is 30 s). */
  checkEveryMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headersMs: 10_000,
  requestMs: 30_000,
  keepAliveMs: 5_000,
  maxConnections: 1_000,
  checkEveryMs: 1_000,
};

/**
 * Binds `app` to `host:port` (port 0: any free port) and resolves once it listens.
 *
 * @example const { url, close } = await listen(createApp({ store }), { host: "127.0.0.1", port: 0 });
 */
export function listen(
  app: Hono,
  options: { host: string; port: number; limits?: Partial<ConnectionLimits> },
): Promise<Listening> {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits };
  return new Promise((resolve, reject) => {
    const server = serve({
      fetch: app.fetch,
      hostname: options.host,
      port: options.port,
      serverOptions: {
        headersTimeout: limits.headersMs,
        requestTimeout: limits.requestMs,
        keepAliveTimeout: limits.keepAliveMs,
        connectionsCheckingInterval: limits.checkEveryMs,
      },
    }) as Server;
    server.maxConnections = limits.maxConnections;
    // Node's headersTimeout counts from a request's first byte, so a connection that never sends
    // one would stay open for good: it gets headersMs to start, then its request is Node's.
    server.on("connection", (socket) => socket.setTimeout(limits.headersMs));
    server.on("request", (request) => request.socket.setTimeout(0));
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
