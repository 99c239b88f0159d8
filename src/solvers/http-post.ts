import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

export interface HttpResponse {
  status: number;
  ok: boolean;
  /** Response headers by lower-case name (the `Headers` subset the callers use). */
  headers: Pick<Headers, "get">;
  text: string;
}

// Keep-alive pools shared by every chat call of the process: at concurrency 50 a run reuses 50
// sockets instead of opening one per request.
const agents = {
  "http:": new HttpAgent({ keepAlive: true, maxSockets: Infinity }),
  "https:": new HttpsAgent({ keepAlive: true, maxSockets: Infinity }),
};

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
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  const agent = target.protocol === "https:" ? agents["https:"] : agents["http:"];
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
