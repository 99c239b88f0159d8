import type { Agent, request as httpRequest } from "node:http";

export interface HttpResponse {
  status: number;
  ok: boolean;
  /** Response headers by lower-case name (the `Headers` subset the callers use). */
  headers: Pick<Headers, "get">;
  text: string;
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
 * against fast local servers (vLLM, llama.cpp). Rejects on network errors and on `signal`.
 *
 * @example const res = await httpPost("http://127.0.0.1:8000/v1/chat/completions", headers, "{}", signal);
 */
export function httpPost(
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<HttpResponse> {
  const target = new URL(url);
  const { request: send, agent } = clientFor(target.protocol);
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: "POST",
        agent,
        signal,
        headers: { ...headers, "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
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
    req.on("error", reject);
    req.end(body);
  });
}
