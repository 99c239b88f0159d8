import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished } from "vitest";
import { httpPost } from "./http-post.js";

/** A server of its own (so the first request opens a new connection) that counts requests. */
async function serve() {
  const seen = { requests: 0, connections: 0 };
  let connected!: () => void;
  const accepted = new Promise<void>((resolve) => (connected = resolve));
  const server = createServer((req, res) => {
    seen.requests++;
    req.resume().on("end", () => res.end("ok"));
  });
  server.on("connection", () => {
    seen.connections++;
    connected();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { url, seen, accepted };
}

describe("httpPost's beforeWrite", () => {
  it("writes nothing on a new connection until the promise beforeWrite returns resolves", async () => {
    const { url, seen, accepted } = await serve();
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    const reply = httpPost(url, {}, "{}", {
      beforeWrite: () => {
        asked++;
        return hold;
      },
    });
    await accepted;
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked).toBe(1);
    expect(seen.requests).toBe(0);
    release();
    expect(await reply).toMatchObject({ status: 200, text: "ok" });
    expect(seen).toEqual({ requests: 1, connections: 1 });
  });

  it("fails with the error of a rejected hold, the request unsent", async () => {
    const { url, seen } = await serve();
    const reply = httpPost(url, {}, "{}", {
      beforeWrite: () => Promise.reject(new Error("permit gone")),
    });
    await expect(reply).rejects.toThrow("permit gone");
    expect(seen.requests).toBe(0);
  });

  it("writes at once when beforeWrite holds nothing, on a kept-alive connection too", async () => {
    const { url, seen } = await serve();
    let asked = 0;
    const handle = { beforeWrite: () => void asked++ };
    for (let i = 0; i < 2; i++) {
      expect(await httpPost(url, {}, "{}", handle)).toMatchObject({ status: 200, text: "ok" });
    }
    expect(asked).toBe(2);
    expect(seen).toEqual({ requests: 2, connections: 1 });
  });
});
