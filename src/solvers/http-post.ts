import type { Agent, request as httpRequest, RequestOptions } from "node:http";

export interface HttpResponse {
  status: number;
  ok: boolean;
  /** Response headers by lower-case name (the `Headers` subset the callers use). */
  headers: Pick<Headers, "get">;
  text: string;
}

/** How a caller ends a request in flight (its timeout, its abort): set while it is in flight. */
export interface RequestHandle {
  end?: ((error: Error) => void) | undefined;
  /**
   * Called once the request has a connected socket, right before its bytes are written; a
   * promise it returns holds the write until it resolves (rejected: the request fails with its
   * error, unsent). Where a rate limit's permit is checked against the time of the write.
   */
  beforeWrite?: (() => Promise<void> | undefined) | undefined;
}

interface Client {
  agent: Agent;
  request: typeof httpRequest;
}

// Keep-alive pools shared by every chat call of the process: at concurrency 50 a run reuses 50
// sockets instead of opening one per request. node:http (and node:https with TLS under it) is
// loaded on the first request of its kind, not at start-up: an eval that calls no model does not
// pay for it.
const clients = new Map<"node:http" | "node:https", Client>();

function clientFor(protocol: string): Client {
  const name = protocol === "https:" ? "node:https" : "node:http";
  let client = clients.get(name);
  if (!client) {
    const { Agent, request } = process.getBuiltinModule(name);
    client = { agent: new Agent({ keepAlive: true, maxSockets: Infinity }), request };
    clients.set(name, client);
  }
  return client;
}

/** An http(s) URL as node:http takes it (host, port, path, user info), parsed once. */
type Target = RequestOptions & { protocol: string };

// Each URL parsed once, not per request (a run sends thousands to the same few). Bounded: a
// process that sends to more URLs than this parses them again.
const MAX_TARGETS = 256;
const targets = new Map<string, Target | null>();

/**
 * `url` as node:http takes it, or undefined when it is not an http:// or https:// URL. Parsed
 * once per URL (what `new URL` and node:http's conversion would make of it on every request).
 *
 * @example httpTarget("http://127.0.0.1:8000/v1/chat/completions")?.path // "/v1/chat/completions"
 */
export function httpTarget(url: string): Target | undefined {
  let target = targets.get(url);
  if (target === undefined) {
    target = parseTarget(url);
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target ?? undefined;
}

function parseTarget(url: string): Target | null {
  if (!URL.canParse(url)) return null;
  const parsed = new URL(url);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return null;
  const { urlToHttpOptions } = process.getBuiltinModule("node:url");
  return urlToHttpOptions(parsed) as Target;
}

/**
 * Loads the HTTP client that requests to `url` will use, ahead of the first one: a solver calls
 * it when it is made (as the eval loads), so that loading node:http (several ms) is start-up,
 * not a delay of the run's first dispatch. A URL that does not parse is left to the request.
 */
export function prepareClient(url: string): void {
  if (URL.canParse(url)) clientFor(new URL(url).protocol);
}

/**
 * POSTs `body` and reads the whole response as text. node:http with keep-alive agents rather than
 * global fetch: several times less overhead per request, which matters at high concurrency
 * against fast local servers (vLLM, llama.cpp). Rejects on network errors, and with the error
 * `handle.end` is called with while the request is in flight (no AbortSignal per request: the
 * caller's timeout and abort end it through the handle).
 *
 * @example const res = await httpPost("http://127.0.0.1:8000/v1/chat/completions", headers, "{}", {});
 */
export function httpPost(
  url: string,
  headers: Record<string, string>,
  body: string,
  handle: RequestHandle,
): Promise<HttpResponse> {
  const target = httpTarget(url);
  if (target === undefined) return Promise.reject(new TypeError(`Invalid URL: ${url}`));
  const { request: send, agent } = clientFor(target.protocol);
  return new Promise((resolve, reject) => {
    const fail = (error: Error): void => {
      handle.end = undefined;
      reject(error);
    };
    const req = send(
      {
        ...target,
        method: "POST",
        agent,
        headers: { ...headers, "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", fail);
        res.on("end", () => {
          handle.end = undefined;
          const status = res.statusCode ?? 0;
          // Plain lookups, not the global Headers: that would load undici on first use.
          const responseHeaders = {
            get: (name: string) => {
              const value = res.headers[name.toLowerCase()];
              return typeof value === "string" ? value : null;
            },
          };
          resolve({
            status,
            ok: status >= 200 && status < 300,
            headers: responseHeaders,
            text: Buffer.concat(chunks).toString("utf8"),
          });
        });
      },
    );
    handle.end = (error) => req.destroy(error);
    req.on("error", fail);
    const { beforeWrite } = handle;
    if (beforeWrite === undefined) {
      req.end(body);
      return;
    }
    // Asked once connected, and written in the same turn as its answer: end() on a socket still
    // connecting only buffers the bytes until the connect is seen, a turn of the event loop later
    // (up to a second on a loaded machine), after which the caller's check would be stale.
    const write = (): void => {
      const hold = beforeWrite();
      if (hold === undefined) req.end(body);
      else {
        hold.then(
          () => {
            if (!req.destroyed) req.end(body);
          },
          (error: Error) => req.destroy(error),
        );
      }
    };
    req.once("socket", (socket) => {
      if (socket.connecting) socket.once("connect", write);
      else write();
    });
  });
}
