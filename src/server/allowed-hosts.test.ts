import { describe, expect, it } from "vitest";
import { Hono } from "hono";
import { allowedHostsFor, hostGuard, parseAllowedHost } from "./allowed-hosts.js";

async function answers(hosts: ReturnType<typeof allowedHostsFor>, host: string) {
  const app = new Hono();
  app.onError((_error, c) => c.text("refused", 403));
  app.use(
    "*",
    hostGuard(() => hosts),
  );
  app.get("/", (c) => c.text("ok"));
  return (await app.request("http://x/", { headers: { host } })).status === 200;
}

describe("allowedHostsFor", () => {
  it.each<[string, number, string[], string, boolean]>([
    ["127.0.0.1", 7477, [], "127.0.0.1:7477", true],
    ["127.0.0.1", 7477, [], "localhost:7477", true],
    ["127.0.0.1", 7477, [], "LocalHost.:7477", true],
    ["127.0.0.1", 7477, [], "[::1]:7477", true],
    ["127.0.0.1", 7477, [], "localhost:7478", false],
    ["127.0.0.1", 7477, [], "localhost", false],
    ["127.0.0.1", 80, [], "localhost", true],
    ["127.0.0.1", 7477, [], "evil.example:7477", false],
    ["127.0.0.1", 7477, [], "127.0.0.1.evil.example:7477", false],
    ["127.0.0.1", 7477, [], "user@127.0.0.1:7477", false],
    ["127.0.0.1", 7477, [], "127.0.0.1:7477/x", false],
    ["127.0.0.1", 7477, [], "", false],
    ["::1", 7477, [], "[::1]:7477", true],
    ["10.1.2.3", 7477, [], "10.1.2.3:7477", true],
    ["10.1.2.3", 7477, [], "localhost:7477", false],
    ["10.1.2.3", 7477, ["stet.example"], "stet.example:443", true],
    ["10.1.2.3", 7477, ["stet.example:8443"], "stet.example:443", false],
    ["0.0.0.0", 7477, ["stet.example"], "localhost:7477", true],
    ["0.0.0.0", 7477, ["stet.example"], "10.1.2.3:7477", false],
    ["::", 7477, ["Stet.Example"], "stet.example", true],
  ])("bound to %s:%i with %j: Host %j → %s", async (host, port, extra, asked, allowed) => {
    expect(await answers(allowedHostsFor(host, port, extra), asked)).toBe(allowed);
  });

  it("admits any Host on a wildcard bind without names: it cannot know its own", async () => {
    expect(allowedHostsFor("0.0.0.0", 7477)).toBeUndefined();
    expect(allowedHostsFor("::", 7477)).toBeUndefined();
    expect(await answers(undefined, "anything.example")).toBe(true);
  });

  it.each(["http://x", "a b", "x:port", "x:123456", "", "[zz]"])(
    "refuses the allowed host %j",
    (value) => {
      expect(() => parseAllowedHost(value)).toThrow(/is not a host name or host:port/);
    },
  );
});
