import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local model server that enforces a provider's rate limits per API key, as OpenAI's chat
 * completions and Anthropic's Messages API do: at most `rpm` requests and `tpm` tokens in any
 * sliding window of `windowMs` (60 000 is a real minute; tests shorten it, e.g. 600 per 6 s is
 * 600 RPM ten times faster). A request over either limit is answered 429 with `retry-after` (and
 * the rate-limit headers, unless `headers: false`); the others are answered with the key's
 * remaining budget in the headers. A request's tokens are its prompt (characters / 4, rounded
 * up) and its completion (`completionTokens`), which the reply's usage reports.
 *
 * It counts what it saw: requests, 429s, and the most requests and tokens that arrived (admitted
 * or not) in any window, which tests compare with the limits.
 */
export interface RateLimitedOptions {
  rpm?: number;
  tpm?: number;
  /** The window the limits are over, ms. Default 60 000. */
  windowMs?: number;
  /** Send x-ratelimit-* / anthropic-ratelimit-* headers. Default true. */
  headers?: boolean;
  /** Tokens of each reply's completion. Default 5. */
  completionTokens?: number;
  latencyMs?: number;
}

export interface RateLimitedServer {
  url: string;
  /** The base URL of the Anthropic format (POST {anthropicUrl}/v1/messages). */
  anthropicUrl: string;
  /** What the server counted in all (its maxima over every key's windows). */
  counts(): RateCounts;
  /** What it counted of one API key's requests alone (zeros for a key it never saw). */
  countsOf(key: string): RateCounts;
  close(): Promise<void>;
}

export interface RateCounts {
  requests: number;
  admitted: number;
  rejected: number;
  /** The most requests that arrived in one window (a sliding window over arrivals). */
  maxRequestsInWindow: number;
  /** The most tokens admitted requests used in one window. */
  maxTokensInWindow: number;
  /** The most tokens one request used. */
  maxRequestTokens: number;
  /** Arrival times (ms) of admitted requests, oldest first. */
  admittedAt: number[];
}

interface Entry {
  at: number;
  tokens: number;
}

class KeyWindow {
  readonly admitted: Entry[] = [];
  readonly arrived: number[] = [];
  constructor(private readonly windowMs: number) {}
  trim(now: number): void {
    while (this.admitted[0] !== undefined && this.admitted[0].at <= now - this.windowMs)
      this.admitted.shift();
    while (this.arrived[0] !== undefined && this.arrived[0] <= now - this.windowMs)
      this.arrived.shift();
  }
  get tokens(): number {
    return this.admitted.reduce((sum, e) => sum + e.tokens, 0);
  }
  /** Ms until the oldest admitted request leaves the window (when budget frees up). */
  resetMs(now: number): number {
    const oldest = this.admitted[0];
    return oldest === undefined ? 0 : Math.max(1, oldest.at + this.windowMs - now);
  }
}

/** A duration as OpenAI writes it: "1m2.5s", "6s", "20ms". */
function openaiDuration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = (ms % 60_000) / 1000;
  return `${minutes > 0 ? `${minutes}m` : ""}${Number(seconds.toFixed(3))}s`;
}

function promptText(body: Record<string, unknown>): string {
  return JSON.stringify([body.system ?? "", body.messages ?? []]);
}

/** Starts the server on 127.0.0.1 (a free port). */
export async function startRateLimitedServer(
  options: RateLimitedOptions,
): Promise<RateLimitedServer> {
  const windowMs = options.windowMs ?? 60_000;
  const rpm = options.rpm ?? Infinity;
  const tpm = options.tpm ?? Infinity;
  const completion = options.completionTokens ?? 5;
  const keys = new Map<string, KeyWindow>();
  const newCounts = (): RateCounts => ({
    requests: 0,
    admitted: 0,
    rejected: 0,
    maxRequestsInWindow: 0,
    maxTokensInWindow: 0,
    maxRequestTokens: 0,
    admittedAt: [],
  });
  const counts = newCounts();
  const byKey = new Map<string, RateCounts>();

  // Decided on arrival (the window counts arrivals), answered after the latency.
  const handle = (req: IncomingMessage, res: ServerResponse, text: string): void => {
    const send = (status: number, headers: Record<string, string>, body: unknown): void => {
      const write = () => res.writeHead(status, headers).end(JSON.stringify(body));
      if (options.latencyMs) setTimeout(write, options.latencyMs);
      else write();
    };
    const now = performance.now() + performance.timeOrigin;
    const anthropic = (req.url ?? "").endsWith("/v1/messages");
    const key = String(
      anthropic
        ? req.headers["x-api-key"]
        : (req.headers.authorization ?? "").replace(/^Bearer /, ""),
    );
    let window = keys.get(key);
    if (!window) keys.set(key, (window = new KeyWindow(windowMs)));
    let own = byKey.get(key);
    if (!own) byKey.set(key, (own = newCounts()));
    window.trim(now);
    window.arrived.push(now);
    const body = JSON.parse(text) as Record<string, unknown>;
    const promptTokens = Math.ceil(promptText(body).length / 4);
    const tokens = promptTokens + completion;
    const over = window.admitted.length + 1 > rpm || window.tokens + tokens > tpm;
    if (!over) window.admitted.push({ at: now, tokens });
    for (const c of [counts, own]) {
      c.requests++;
      c.maxRequestsInWindow = Math.max(c.maxRequestsInWindow, window.arrived.length);
      if (over) {
        c.rejected++;
        continue;
      }
      c.admitted++;
      c.admittedAt.push(now);
      c.maxTokensInWindow = Math.max(c.maxTokensInWindow, window.tokens);
      c.maxRequestTokens = Math.max(c.maxRequestTokens, tokens);
    }
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.headers !== false) Object.assign(headers, limitHeaders(window, now, anthropic));
    if (over) {
      // How long until a request of this size fits: until enough of the window has left it.
      headers["retry-after"] = String(Math.max(1, Math.ceil(window.resetMs(now) / 1000)));
      const error = anthropic
        ? { type: "error", error: { type: "rate_limit_error", message: "rate limited" } }
        : {
            error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" },
          };
      send(429, headers, error);
      return;
    }
    const content = "ok";
    const model = String(body.model);
    const reply = anthropic
      ? {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model,
          content: [{ type: "text", text: content }],
          stop_reason: "end_turn",
          usage: { input_tokens: promptTokens, output_tokens: completion },
        }
      : {
          id: "chatcmpl-1",
          object: "chat.completion",
          model,
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage: { prompt_tokens: promptTokens, completion_tokens: completion },
        };
    send(200, headers, reply);
  };

  const limitHeaders = (w: KeyWindow, now: number, anthropic: boolean): Record<string, string> => {
    const requestsLeft = Math.max(0, rpm - w.admitted.length);
    const tokensLeft = Math.max(0, tpm - w.tokens);
    const reset = w.resetMs(now);
    const out: Record<string, string> = {};
    if (anthropic) {
      const at = new Date(now + reset).toISOString();
      if (rpm !== Infinity) {
        out["anthropic-ratelimit-requests-limit"] = String(rpm);
        out["anthropic-ratelimit-requests-remaining"] = String(requestsLeft);
        out["anthropic-ratelimit-requests-reset"] = at;
      }
      if (tpm !== Infinity) {
        out["anthropic-ratelimit-tokens-limit"] = String(tpm);
        out["anthropic-ratelimit-tokens-remaining"] = String(tokensLeft);
        out["anthropic-ratelimit-tokens-reset"] = at;
      }
      return out;
    }
    if (rpm !== Infinity) {
      out["x-ratelimit-limit-requests"] = String(rpm);
      out["x-ratelimit-remaining-requests"] = String(requestsLeft);
      out["x-ratelimit-reset-requests"] = openaiDuration(reset);
    }
    if (tpm !== Infinity) {
      out["x-ratelimit-limit-tokens"] = String(tpm);
      out["x-ratelimit-remaining-tokens"] = String(tokensLeft);
      out["x-ratelimit-reset-tokens"] = openaiDuration(reset);
    }
    return out;
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      handle(req, res, Buffer.concat(chunks).toString("utf8"));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    anthropicUrl: `http://127.0.0.1:${port}`,
    counts: () => ({ ...counts, admittedAt: [...counts.admittedAt] }),
    countsOf: (key) => {
      const own = byKey.get(key) ?? newCounts();
      return { ...own, admittedAt: [...own.admittedAt] };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
