import { Agent as HttpAgent, request as httpRequest } from "node:http";
import type { Agent as HttpsAgent } from "node:https";

export interface HttpResponse {
  status: number;
  ok: boolean;
  /** Response headers by lower-case name (the `Headers` subset the callers use). */
  headers: Pick<Headers, "get">;
  text: string;
}

// Keep-alive pools shared by every chat call of the process: at concurrency 50 a run reuses 50
// sockets instead of opening one per request.
const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: Infinity });
let https: { agent: HttpsAgent; request: typeof httpRequest } | undefined;

/** node:https (and TLS under it) is loaded on the first https URL, not at start-up. */
function httpsClient(): NonNullable<typeof https> {
  if (!https) {
    const { Agent, request } = process.getBuiltinModule("node:https");
    https = { agent: new Agent({ keepAlive: true, maxSockets: Infinity }), request };
  }
  return https;
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
  const { request: send, agent } =
    target.protocol === "https:" ? httpsClient() : { request: httpRequest, agent: httpAgent };
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
