import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { httpRaw } from "./helpers/http.js";
import { startServe, type ServeProcess } from "./helpers/serve.js";
import { tempDir } from "./helpers/temp-store.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function tmpDb() {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  return join(tmp.dir, "stet.db");
}

async function serveProcess(args: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const server = await startServe(["--store", tmpDb(), ...args], env);
  cleanups.push(() => server.proc.child.kill("SIGKILL"));
  return server;
}

/** A figure of /proc/<pid>/status in bytes: VmRSS (resident now), VmHWM (its peak so far). */
function memory(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1];
  return Number(kb) * 1024;
}

const MB = 1024 * 1024;

/**
 * POSTs `size` bytes of JSON-looking filler in 1 MiB writes, declared by Content-Length or
 * chunked, until the server answers; resolves with the status.
 */
/**
 * Sends a `size`-byte JSON body (with Content-Length, or chunked) over a raw socket and resolves
 * with the status the server answered. The server answers 413 and closes while the body is still
 * coming, so the sender's writes may fail (EPIPE, ECONNRESET): what counts is the answer read.
 * 0 when the connection was cut before an answer could be read: @hono/node-server drains an
 * unread body for 500 ms, then closes, and a reset can take the unread 413 with it (seen on a
 * loaded machine).
 */
function upload(url: string, size: number, declared: boolean): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let received = "";
    let answered = false;
    const answer = () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (status && !answered) {
        answered = true;
        resolve(Number(status[1]));
        socket.destroy();
      }
    };
    socket.setEncoding("latin1");
    socket.on("data", (data: string) => {
      received += data;
      answer();
    });
    socket.on("error", () => answer());
    socket.on("close", () => {
      answer();
      if (!answered) resolve(0);
    });
    socket.write(
      `POST /api/runs HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
        (declared ? `Content-Length: ${size}\r\n` : "Transfer-Encoding: chunked\r\n") +
        "\r\n",
    );
    const chunk = Buffer.alloc(MB, " ");
    const framed = declared
      ? chunk
      : Buffer.concat([
          Buffer.from(`${chunk.length.toString(16)}\r\n`),
          chunk,
          Buffer.from("\r\n"),
        ]);
    let sent = 0;
    const next = () => {
      while (!answered && sent < size && !socket.destroyed) {
        sent += chunk.length;
        if (!socket.write(framed)) return void socket.once("drain", next);
      }
      if (!answered && !socket.destroyed && !declared) socket.write("0\r\n\r\n");
    };
    next();
  });
}

/** An upload's answer, tried again (up to 3 times) when the connection was cut before one. */
async function refused(url: string, size: number, declared: boolean): Promise<number> {
  for (let i = 0; ; i++) {
    const status = await upload(url, size, declared);
    if (status !== 0 || i === 2) return status;
  }
}

describe("stet serve: request bodies", () => {
  it("refuses a 50 MB body with 413, declared or chunked, and its memory grows < 100 MB", async () => {
    const server = await serveProcess();
    // Warm up, so what is measured is the bodies, not the first request's lazy loading.
    expect((await server.fetch("/api/runs")).status).toBe(200);
    const before = memory(server.pid, "VmRSS");
    expect(await refused(server.url, 50 * MB, true)).toBe(413);
    expect(await refused(server.url, 50 * MB, false)).toBe(413);
    const peak = memory(server.pid, "VmHWM");
    expect(peak - before).toBeLessThan(100 * MB);
    // It still serves.
    expect((await server.fetch("/api/runs")).status).toBe(200);
  });

  it("takes --max-body", async () => {
    const server = await serveProcess(["--max-body", "100"]);
    const res = await server.post("/api/runs", { eval: "x".repeat(200) });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: { code: "body_too_large" } });
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

describe("stet serve: tokens", () => {
  it("refuses to bind 0.0.0.0 with a 3-character token, naming the rule, not the token", async () => {
    const db = tmpDb();
    const token = "Zq9";
    const result = await runCli(["serve", "--host", "0.0.0.0", "--port", "0", "--store", db], {
      env: { STET_TOKEN: token },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /STET_TOKEN is 3 characters long; binding 0\.0\.0\.0 needs one of at least 32/,
    );
    expect(result.stderr).toMatch(/openssl rand -hex 32/);
    expect(result.stdout + result.stderr).not.toContain(token);
    // Refused before the store was opened: nothing was created.
    expect(existsSync(db)).toBe(false);
  });

  it("binds 0.0.0.0 with a 32-character token, which every /api request then needs", async () => {
    const token = "0123456789abcdef0123456789abcdef";
    const server = await serveProcess(["--host", "0.0.0.0"], { STET_TOKEN: token });
    expect((await server.fetch("/api/runs")).status).toBe(401);
    const ok = await server.fetch("/api/runs", { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
  });

  it("accepts a short token on loopback, with a warning", async () => {
    const server = await serveProcess([], { STET_TOKEN: "short-tok" });
    expect(server.proc.stderr()).toMatch(/warning: STET_TOKEN is 9 characters long/);
    expect((await server.fetch("/api/runs")).status).toBe(401);
    const ok = await server.fetch("/api/runs", { headers: { authorization: "Bearer short-tok" } });
    expect(ok.status).toBe(200);
  });

  it("never prints the token, through failed attempts, rate limiting, refusals and shutdown", async () => {
    const token = "T0k3n-never-printed-" + "q".repeat(24);
    const server = await serveProcess([], { STET_TOKEN: token });
    const statuses: number[] = [];
    const send = async (path: string, init: RequestInit = {}) =>
      statuses.push((await server.fetch(path, init)).status);
    for (const wrong of [`${token}x`, token.slice(1), token.toUpperCase(), "Basic", ""]) {
      await send("/api/runs", { headers: { authorization: `Bearer ${wrong}` } });
    }
    const auth = { authorization: `Bearer ${token}` };
    await send("/api/runs", { headers: auth });
    await send("/api/runs", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ eval: token }),
    });
    await send("/api/runs/r_nope/resume", { method: "POST", headers: auth });
    for (let i = 0; i < 12; i++)
      await send("/api/runs", { headers: { authorization: `Bearer ${i}` } });
    const [failed, ok, notFound, limited] = [401, 200, 404, 429];
    expect(statuses).toEqual([
      ...Array<number>(5).fill(failed),
      ok,
      notFound,
      notFound,
      ...Array<number>(10).fill(failed),
      limited,
      limited,
    ]);
    server.proc.child.kill("SIGTERM");
    const result = await server.proc.done;
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).not.toContain(token);
    expect(result.stdout + result.stderr).not.toContain(token.slice(0, 16));
  });
});

describe("stet serve: allowed hosts", () => {
  async function status(server: ServeProcess, host: string) {
    return (await httpRaw(`${server.url}/api/runs`, { headers: { host } })).status;
  }

  it("answers to --allowed-host and $STET_ALLOWED_HOSTS names, and to no other", async () => {
    const server = await serveProcess(
      ["--allowed-host", "stet.example", "--allowed-host", "b.example:81"],
      {
        STET_ALLOWED_HOSTS: "c.example, d.example",
      },
    );
    const port = new URL(server.url).port;
    expect(await status(server, `127.0.0.1:${port}`)).toBe(200);
    expect(await status(server, `localhost:${port}`)).toBe(200);
    expect(await status(server, "stet.example")).toBe(200);
    expect(await status(server, "b.example:81")).toBe(200);
    expect(await status(server, "c.example")).toBe(200);
    expect(await status(server, "d.example:9000")).toBe(200);
    expect(await status(server, "evil.example")).toBe(403);
    expect(await status(server, `evil.example:${port}`)).toBe(403);
  });

  it("on 0.0.0.0 answers to any Host unless names are given", async () => {
    const token = "z".repeat(32);
    const open = await serveProcess(["--host", "0.0.0.0"], { STET_TOKEN: token });
    expect(await status(open, "anything.example")).toBe(401);
    const named = await serveProcess(["--host", "0.0.0.0", "--allowed-host", "stet.example"], {
      STET_TOKEN: token,
    });
    expect(await status(named, "stet.example")).toBe(401);
    expect(await status(named, "anything.example")).toBe(403);
    expect(await status(named, `localhost:${new URL(named.url).port}`)).toBe(401);
  });

  it("refuses a malformed --allowed-host before it opens the store", async () => {
    const db = tmpDb();
    const result = await runCli([
      "serve",
      "--port",
      "0",
      "--store",
      db,
      "--allowed-host",
      "http://x/",
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/allowed host "http:\/\/x\/" is not a host name or host:port/);
    expect(existsSync(db)).toBe(false);
  });
});
