import { afterEach, describe, expect, it } from "vitest";
import { createEvalRegistry } from "../src/runs/eval-registry.js";
import type { Eval } from "../src/eval/types.js";
import { serve, type ServeOptions, type Serving } from "../src/server/serve.js";
import { gatedEval } from "./helpers/server-app.js";
import { httpRaw, openStream, rawSocket, type RawResponse } from "./helpers/http.js";
import { tempStore } from "./helpers/temp-store.js";
import { until } from "./helpers/wait.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A real `serve()` on 127.0.0.1, a free port, over a temp SQLite store. */
async function start(evals: Eval[] = [], options: Partial<ServeOptions> = {}) {
  const t = tempStore();
  cleanups.push(t.cleanup);
  const server: Serving = await serve({
    store: t.store,
    host: "127.0.0.1",
    port: 0,
    evals: createEvalRegistry(
      evals.map((ev) => ({ eval: ev, path: `/virtual/${ev.name}.ts`, baseDir: t.dir })),
    ),
    ...options,
  });
  cleanups.push(async () => {
    server.abort();
    await server.shutdown();
  });
  const host = new URL(server.url).host;
  return { server, store: t.store, url: server.url, host };
}

const JSON_HEADERS = { "content-type": "application/json" };

/** A run of `gated` started through the API and left running (its solver calls wait). */
async function runningRun(url: string, headers: Record<string, string> = {}) {
  const stream = await openStream(`${url}/api/runs`, {
    method: "POST",
    headers: { ...JSON_HEADERS, ...headers },
    body: JSON.stringify({ eval: "gated" }),
  });
  await until(() => /"runId":"(r_\w+)"/.test(stream.received()), "the started event");
  const runId = /"runId":"(r_\w+)"/.exec(stream.received())![1]!;
  return { runId, stream };
}

function expectError(res: RawResponse, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ error: { code, message: expect.any(String) } });
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy": expect.stringMatching(/frame-ancestors 'none'/),
};

describe("state-changing requests: JSON only", () => {
  const bodies: [string, string, string][] = [
    ["text/plain", "text/plain", '{"eval":"gated"}'],
    ["text/plain with a charset", "text/plain;charset=UTF-8", '{"eval":"gated"}'],
    ["a form", "application/x-www-form-urlencoded", "eval=gated"],
    [
      "multipart",
      "multipart/form-data; boundary=x",
      '--x\r\nContent-Disposition: form-data; name="eval"\r\n\r\ngated\r\n--x--\r\n',
    ],
    ["a JSON look-alike", "application/jsonp", '{"eval":"gated"}'],
  ];

  it.each(bodies)(
    "refuses %s with 415 on every POST route, starting nothing",
    async (_l, type, body) => {
      const gate = gatedEval();
      const { url, store } = await start([gate.ev]);
      for (const path of ["/api/runs", "/api/runs/r_x/resume", "/api/runs/r_x/cancel"]) {
        const res = await httpRaw(`${url}${path}`, {
          method: "POST",
          headers: { "content-type": type },
          body,
        });
        expectError(res, 415, "unsupported_media_type");
      }
      expect(await store.reads.listRuns()).toEqual([]);
      expect(gate.calls.size).toBe(0);
    },
  );

  it("refuses a body without a Content-Type, chunked or not", async () => {
    const { url } = await start([gatedEval().ev]);
    const sized = await httpRaw(`${url}/api/runs`, { method: "POST", body: '{"eval":"gated"}' });
    expectError(sized, 415, "unsupported_media_type");
    const chunked = await httpRaw(`${url}/api/runs`, {
      method: "POST",
      body: (req) => {
        req.write('{"eval":');
        req.end('"gated"}');
      },
    });
    expectError(chunked, 415, "unsupported_media_type");
  });

  it("accepts application/json (with a charset) and a body-less POST without a Content-Type", async () => {
    const { url } = await start([gatedEval().ev]);
    const started = await openStream(`${url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ eval: "gated" }),
    });
    expect(started.status).toBe(200);
    started.close();
    // No body, no type: nothing to misread. The route then decides (an unknown run here).
    const bare = await httpRaw(`${url}/api/runs/r_nope/cancel`, { method: "POST" });
    expectError(bare, 404, "run_not_found");
  });
});

describe("cross-origin requests", () => {
  it.each([
    ["a foreign Origin", { origin: "http://evil.example" }],
    ["an Origin on another port", { origin: "http://127.0.0.1:1" }],
    ["the null Origin", { origin: "null" }],
    ["a foreign Referer", { referer: "http://evil.example/page" }],
  ])("refuses %s with 403 on every POST route", async (_label, from) => {
    const gate = gatedEval();
    const { url, store } = await start([gate.ev]);
    for (const path of ["/api/runs", "/api/runs/r_x/resume", "/api/runs/r_x/cancel"]) {
      const res = await httpRaw(`${url}${path}`, {
        method: "POST",
        headers: { ...JSON_HEADERS, ...from },
        body: JSON.stringify({ eval: "gated" }),
      });
      expectError(res, 403, "cross_origin");
    }
    expect(await store.reads.listRuns()).toEqual([]);
  });

  it("admits the server's own origin, by Origin or by Referer", async () => {
    const { url, store } = await start([gatedEval().ev]);
    const byOrigin = await openStream(`${url}/api/runs`, {
      method: "POST",
      headers: { ...JSON_HEADERS, origin: url },
      body: JSON.stringify({ eval: "gated" }),
    });
    expect(byOrigin.status).toBe(200);
    byOrigin.close();
    const byReferer = await httpRaw(`${url}/api/runs/r_nope/cancel`, {
      method: "POST",
      headers: { referer: `${url}/#/runs/r_nope` },
    });
    expectError(byReferer, 404, "run_not_found");
    expect(await store.reads.listRuns()).toHaveLength(1);
  });

  it("does not restrict reads: a GET from anywhere is answered (the browser keeps it from the page)", async () => {
    const { url } = await start();
    const res = await httpRaw(`${url}/api/runs`, { headers: { origin: "http://evil.example" } });
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe("the Host header (DNS rebinding)", () => {
  it.each(["/api/runs", "/", "/ui/app.js", "/ui/app.css", "/api/nothing"])(
    "refuses a foreign Host on %s with 403",
    async (path) => {
      const { url } = await start();
      for (const host of ["evil.example", "evil.example:7477", "127.0.0.1:1", "localhost"]) {
        const res = await httpRaw(`${url}${path}`, { headers: { host } });
        expectError(res, 403, "forbidden_host");
        expect(res.headers).toMatchObject(SECURITY_HEADERS);
      }
    },
  );

  it("answers to its address and the loopback names with its port", async () => {
    const { url, server } = await start();
    const port = new URL(server.url).port;
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      `LOCALHOST:${port}`,
    ]) {
      expect((await httpRaw(`${url}/api/runs`, { headers: { host } })).status).toBe(200);
      expect((await httpRaw(`${url}/`, { headers: { host } })).status).toBe(200);
    }
  });

  it("answers to an allowed host: a name for any port, name:port for that port only", async () => {
    const { url } = await start([], { allowedHosts: ["stet.example", "proxy.example:8443"] });
    const status = async (host: string) =>
      (await httpRaw(`${url}/api/runs`, { headers: { host } })).status;
    expect(await status("stet.example")).toBe(200);
    expect(await status("stet.example:443")).toBe(200);
    expect(await status("proxy.example:8443")).toBe(200);
    expect(await status("proxy.example:8444")).toBe(403);
    expect(await status("evil.example")).toBe(403);
  });

  it("refuses a malformed allowed host before it binds", async () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    await expect(
      serve({ store: t.store, host: "127.0.0.1", port: 0, allowedHosts: ["a/b"] }),
    ).rejects.toMatchObject({ code: "E_CONFIG", message: expect.stringMatching(/"a\/b"/) });
  });
});

describe("security headers", () => {
  it("are on API answers, errors, the UI, its assets and event streams", async () => {
    const token = "t".repeat(40);
    const auth = { authorization: `Bearer ${token}` };
    const { url } = await start([gatedEval().ev], { token });
    const { runId, stream } = await runningRun(url, auth);
    const answers = [
      await httpRaw(`${url}/api/runs`, { headers: auth }),
      await httpRaw(`${url}/api/runs/r_nope`, { headers: auth }),
      await httpRaw(`${url}/api/runs`),
      await httpRaw(`${url}/api/runs`, {
        method: "POST",
        headers: { ...auth, "content-type": "text/plain" },
        body: "x",
      }),
      await httpRaw(`${url}/`),
      await httpRaw(`${url}/ui/app.js`),
      await httpRaw(`${url}/ui/app.css`),
      await httpRaw(`${url}/nothing`),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 404, 401, 415, 200, 200, 200, 404]);
    for (const answer of answers) expect(answer.headers).toMatchObject(SECURITY_HEADERS);
    const events = await openStream(`${url}/api/runs/${runId}/events`, { headers: auth });
    expect(events.status).toBe(200);
    events.close();
    stream.close();
  });

  it("give the UI a policy without inline scripts or styles, talking only to this server", async () => {
    const { url } = await start();
    const page = await httpRaw(`${url}/`);
    const csp = String(page.headers["content-security-policy"]);
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    // The page has nothing inline for the policy to refuse.
    expect(page.text).not.toMatch(/<style|<script>|\sstyle=|\son[a-z]+=/);
  });
});

describe("request bodies", () => {
  it("refuses one over --max-body with 413, declared or chunked, and admits one at the limit", async () => {
    const gate = gatedEval();
    const { url, store } = await start([gate.ev], { maxBodyBytes: 64 });
    const padded = (n: number) => {
      const base = '{"eval":"gated","x":""}';
      return base.replace('""', `"${" ".repeat(n - base.length)}"`);
    };
    expect(padded(64)).toHaveLength(64);
    const declared = await httpRaw(`${url}/api/runs`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: padded(65),
    });
    expectError(declared, 413, "body_too_large");
    expect(declared.headers).toMatchObject(SECURITY_HEADERS);
    const chunked = await httpRaw(`${url}/api/runs`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: (req) => {
        req.write(padded(65).slice(0, 40));
        req.end(padded(65).slice(40));
      },
    });
    expectError(chunked, 413, "body_too_large");
    expect(await store.reads.listRuns()).toEqual([]);
    // At the limit it is read: "x" is no field of a start, so the route refuses it, with a 400.
    const atLimit = await httpRaw(`${url}/api/runs`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: padded(64),
    });
    expectError(atLimit, 400, "invalid_request");
  });
});

describe("event streams", () => {
  it("are capped: past the cap 503 too_many_streams, starting nothing; a client that goes away frees its slot", async () => {
    const gate = gatedEval({ n: 4 });
    const { url, server, store } = await start([gate.ev], { maxStreams: 3 });
    const { runId, stream: starting } = await runningRun(url);
    const follows = [
      await openStream(`${url}/api/runs/${runId}/events`),
      await openStream(`${url}/api/runs/${runId}/events`),
    ];
    expect(follows.map((f) => f.status)).toEqual([200, 200]);
    expect(server.openStreams()).toBe(3);

    expectError(await httpRaw(`${url}/api/runs/${runId}/events`), 503, "too_many_streams");
    const refusedStart = await httpRaw(`${url}/api/runs`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ eval: "gated" }),
    });
    expectError(refusedStart, 503, "too_many_streams");
    expect(await store.reads.listRuns()).toHaveLength(1);

    // The clients go away (their sockets destroyed): every stream ends, the run goes on.
    for (const s of [starting, ...follows]) s.close();
    await until(() => server.openStreams() === 0, "the open stream count back at 0", 30_000);
    expect(server.executing()).toBe(1);

    const again = [1, 2, 3].map(() => openStream(`${url}/api/runs/${runId}/events`));
    const reopened = await Promise.all(again);
    expect(reopened.map((s) => s.status)).toEqual([200, 200, 200]);
    gate.allow();
    // The run ends: the follows end too, by themselves, and give back their slots.
    await Promise.all(reopened.map((s) => s.ended));
    expect(reopened.every((s) => s.received().includes("event: completed"))).toBe(true);
    await until(() => server.openStreams() === 0, "the streams' slots given back", 30_000);
  });

  it("all end when many clients go away at once, their poll loops stopped", async () => {
    const gate = gatedEval({ n: 2 });
    const { url, server } = await start([gate.ev], { maxStreams: 40 });
    const { runId, stream } = await runningRun(url);
    const follows = await Promise.all(
      Array.from({ length: 30 }, () => openStream(`${url}/api/runs/${runId}/events`)),
    );
    expect(server.openStreams()).toBe(31);
    for (const s of [stream, ...follows]) s.close();
    await until(() => server.openStreams() === 0, "every stream ended", 30_000);
  });
});

describe("connections", () => {
  it("cuts a client that sends nothing or is slow to send its headers, but never a long event stream", async () => {
    const gate = gatedEval({ n: 2 });
    const { url } = await start([gate.ev], {
      limits: { headersMs: 300, requestMs: 600, checkEveryMs: 50 },
    });
    const { runId, stream } = await runningRun(url);
    const follow = await openStream(`${url}/api/runs/${runId}/events`);

    // A slowloris: a header line every 100 ms, so the connection is never idle.
    const slow = await rawSocket(url);
    slow.socket.write(`GET /api/runs HTTP/1.1\r\nHost: ${new URL(url).host}\r\n`);
    const trickle = setInterval(() => slow.socket.write("X-Slow: 1\r\n"), 100);
    let answer = "";
    slow.socket.on("data", (d: Buffer) => (answer += d.toString()));
    const idle = await rawSocket(url);
    let closed = 0;
    for (const socket of [slow, idle]) void socket.closed.then(() => closed++);
    await until(() => closed === 2, "the server to close both connections", 30_000);
    clearInterval(trickle);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);

    // Both streams outlived the request timeout several times over, and still deliver.
    await new Promise((r) => setTimeout(r, 1_500));
    gate.allow();
    await Promise.all([follow.ended, stream.ended]);
    expect(follow.received()).toContain("event: completed");
    expect(stream.received()).toContain("event: completed");
  });

  it("drops connections past maxConnections", async () => {
    const { url } = await start([], { limits: { maxConnections: 2 } });
    const held = [await rawSocket(url), await rawSocket(url)];
    const extra = await rawSocket(url);
    await extra.closed;
    for (const { socket } of held) socket.destroy();
    await Promise.all(held.map((s) => s.closed));
    await until(
      async () => (await httpRaw(`${url}/api/runs`).catch(() => undefined))?.status === 200,
      "a new connection admitted",
      10_000,
    );
  });
});

describe("failed token attempts", () => {
  const TOKEN = "k".repeat(48);

  it("are limited per client address: the 11th in a minute gets 429 with Retry-After, other clients are unaffected", async () => {
    const { url } = await start([], { token: TOKEN });
    const attempt = (token: string, localAddress = "127.0.0.1") =>
      httpRaw(`${url}/api/runs`, { headers: { authorization: `Bearer ${token}` }, localAddress });
    for (let i = 0; i < 10; i++) expectError(await attempt(`wrong-${i}`), 401, "unauthorized");
    const limited = await attempt("wrong-10");
    expectError(limited, 429, "rate_limited");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(Number(limited.headers["retry-after"])).toBeLessThanOrEqual(60);
    // Even the right token waits, so a guesser learns nothing from guessing faster.
    expectError(await attempt(TOKEN), 429, "rate_limited");
    // Another client, with the right token or a wrong one, is answered as usual.
    expect((await attempt(TOKEN, "127.0.0.2")).status).toBe(200);
    expectError(await attempt("wrong", "127.0.0.2"), 401, "unauthorized");
  });

  it("are forgotten after a success, and never keep the UI from loading", async () => {
    const { url } = await start([], { token: TOKEN });
    const attempt = (token?: string) =>
      httpRaw(`${url}/api/runs`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    for (let i = 0; i < 9; i++) expect((await attempt()).status).toBe(401);
    expect((await attempt(TOKEN)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await attempt("wrong")).status).toBe(401);
    expect((await attempt()).status).toBe(429);
    expect((await httpRaw(`${url}/`)).status).toBe(200);
    expect((await httpRaw(`${url}/ui/app.js`)).status).toBe(200);
  });
});
