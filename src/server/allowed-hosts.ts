import type { Context, MiddlewareHandler } from "hono";
import { StetError } from "../core/errors.js";
import { ApiError } from "./api-error.js";
import { isLoopback } from "./bind-policy.js";

/** A `Host` value taken apart: a lower-case name (IPv6 in brackets) and its port, if any. */
interface HostName {
  name: string;
  port?: string;
}

/** The `Host` names a server answers to: a name with a port, or a name with any port. */
export type AllowedHosts = readonly HostName[];

const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]{1,5}))?$/;

function parseHost(value: string): HostName | undefined {
  const match = HOST.exec(value.trim().toLowerCase());
  if (!match?.[1]) return undefined;
  // "localhost." is "localhost": the trailing dot only says the name is fully qualified.
  const name = match[1].replace(/\.$/, "");
  return match[2] === undefined ? { name } : { name, port: String(Number(match[2])) };
}

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];
const WILDCARDS = new Set(["0.0.0.0", "::", "[::]"]);

/**
 * The `Host` names of a server bound to `host:port`: the bind address, for a loopback or wildcard
 * bind also `localhost`, `127.0.0.1` and `[::1]` (with the port), plus `extra` (`name` for any
 * port, `name:port` for one). A wildcard bind (0.0.0.0, ::) without `extra` cannot know the names
 * it is reached by, so it answers to any (undefined); it requires a token anyway.
 *
 * @example allowedHostsFor("127.0.0.1", 7477, ["stet.internal"]) // 127.0.0.1:7477, localhost:7477, …
 */
export function allowedHostsFor(
  host: string,
  port: number,
  extra: readonly string[] = [],
): AllowedHosts | undefined {
  const named = extra.map(parseAllowedHost);
  const wildcard = WILDCARDS.has(host);
  if (wildcard && named.length === 0) return undefined;
  const bound = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const local = isLoopback(host) || wildcard ? LOOPBACK_NAMES : [];
  const own = [...(wildcard ? [] : [bound]), ...local].map((name) => ({
    name: name.toLowerCase(),
    port: String(port),
  }));
  return [...own, ...named];
}

/**
 * One `--allowed-host` value: `name` or `name:port` (IPv6 as `[::1]:7477`).
 *
 * @example parseAllowedHost("stet.example.com:8443") // { name: "stet.example.com", port: "8443" }
 */
export function parseAllowedHost(value: string): HostName {
  const parsed = parseHost(value);
  if (!parsed) {
    throw new StetError(
      "E_CONFIG",
      `allowed host "${value}" is not a host name or host:port (e.g. stet.example.com or 10.0.0.5:7477)`,
    );
  }
  return parsed;
}

function allows(hosts: AllowedHosts, value: string): boolean {
  const asked = parseHost(value);
  if (!asked) return false;
  // A Host without a port names the scheme's default one; this server speaks plain HTTP.
  const port = asked.port ?? "80";
  return hosts.some((h) => h.name === asked.name && (h.port === undefined || h.port === port));
}

/**
 * The request's `Host`: the header, or for an in-process `app.request(...)`, which sends none, the
 * URL's host.
 */
export function requestHost(c: Context): string {
  return c.req.header("host") ?? new URL(c.req.url).host;
}

/**
 * Middleware that answers 403 `forbidden_host` unless the request's `Host` is one of `hosts()`.
 * This is what keeps DNS rebinding out: a page of `evil.example` that resolves to 127.0.0.1
 * still sends `Host: evil.example`. `hosts()` is asked per request, since a server bound to
 * port 0 learns its port only once it listens; undefined admits any Host.
 *
 * @example app.use("*", hostGuard(() => allowedHostsFor("127.0.0.1", 7477)));
 */
export function hostGuard(hosts: () => AllowedHosts | undefined): MiddlewareHandler {
  return async (c, next) => {
    const allowed = hosts();
    const host = requestHost(c);
    if (allowed && !allows(allowed, host)) {
      throw new ApiError(
        403,
        "forbidden_host",
        `this server does not answer to Host "${host.slice(0, 200)}"; start it with --allowed-host to add a name`,
      );
    }
    await next();
  };
}
