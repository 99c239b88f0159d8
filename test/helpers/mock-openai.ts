import { spawn } from "node:child_process";
import { renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import {
  anthropicError,
  anthropicTurnsError,
  anthropicReply,
  keyOf,
  messagesOf,
  toolNamesOf,
  type MockMessage,
  type MockToolCall,
  type WireFormat,
} from "./mock-wire.js";

export type { MockMessage, MockToolCall, WireFormat } from "./mock-wire.js";

/** What the mock knows about one request when deciding how to answer it. */
export interface MockRequest {
  /** The sample's identity: the content of the last user message. */
  key: string;
  /** The wire format the request came in: POST …/chat/completions or POST …/v1/messages. */
  format: WireFormat;
  /** Its messages in one view for both formats (see MockMessage). */
  messages: MockMessage[];
  /** The names of the tools it offers. */
  tools: string[];
  /** 1-based number of this request among those with the same key. */
  n: number;
  /** 1-based number of this request among all requests. */
  index: number;
  /** When the request's body had arrived: ms since the epoch, sub-ms precise (for rates). */
  receivedAt: number;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

export interface MockUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** OpenAI's breakdown of the prompt: `cached_tokens` of it read from the prompt cache. */
  prompt_tokens_details?: { cached_tokens: number };
  /** OpenAI's breakdown of the completion: `reasoning_tokens` of it spent reasoning. */
  completion_tokens_details?: { reasoning_tokens: number };
}

/** How to answer one request. */
export type MockAction =
  | { reply: string; usage?: MockUsage; latencyMs?: number }
  /** A whole assistant message (tool_calls, refusal, …) and its finish_reason. */
  | {
      message: Record<string, unknown>;
      finishReason?: string;
      usage?: MockUsage;
      latencyMs?: number;
    }
  /** Tool calls (and optional text), in the request's wire format: tool_calls or tool_use. */
  | { toolCalls: MockToolCall[]; content?: string; usage?: MockUsage; latencyMs?: number }
  | { status: number; body?: unknown; retryAfter?: number | string; latencyMs?: number }
  | { hang: true }
  | { drop: true };

export interface MockOpenAIOptions {
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Delay before every answer. Default 0. */
  latencyMs?: number;
  /** The assistant's text. Default: the key (the user message) echoed. */
  reply?: (request: MockRequest) => string | Promise<string>;
  /** Default { prompt_tokens: 10, completion_tokens: 5 }. */
  usage?: MockUsage;
  /** Per key: the n-th request gets `sequence[n - 1]`; later ones get the reply. */
  sequence?: MockAction[];
  /** Full control; returning undefined falls back to `sequence`, then the reply. */
  respond?: (request: MockRequest) => MockAction | undefined | Promise<MockAction | undefined>;
  /** Written at start and rewritten (atomically) with the counts per key on every request. */
  countsFile?: string;
}

export interface MockOpenAI {
  /** Base URL for `baseURL`/OPENAI_BASE_URL, e.g. http://127.0.0.1:41234/v1. */
  url: string;
  /**
   * Base URL of the same server for an `anthropic:` model's `baseURL`/ANTHROPIC_BASE_URL, e.g.
   * http://127.0.0.1:41234 (the Messages API at /v1/messages).
   */
  anthropicURL: string;
  port: number;
  /** Requests received per key, counted on arrival. */
  counts(): Record<string, number>;
  /** Every request received, in order. */
  requests: MockRequest[];
  reset(): void;
  /** Closes the server, cutting hanging requests. */
  close(): Promise<void>;
}

/**
 * Starts a local OpenAI-compatible chat-completions server (POST …/chat/completions), which also
 * speaks Anthropic's Messages API (POST /v1/messages), that counts requests per sample and
 * answers as scripted, each request in its own wire format. GET /__counts returns the counts;
 * POST /__reset clears them.
 *
 * @example
 * const mock = await startMockOpenAI({ sequence: [{ status: 500 }] }); // each sample: 500, then OK
 * solvers.chat({ model: "gpt-4o-mini", baseURL: mock.url });
 */
export async function startMockOpenAI(options: MockOpenAIOptions = {}): Promise<MockOpenAI> {
  const requests: MockRequest[] = [];
  let counts: Record<string, number> = {};
  const writeCounts = (): void => {
    if (options.countsFile === undefined) return;
    writeFileSync(`${options.countsFile}.tmp`, JSON.stringify(counts));
    renameSync(`${options.countsFile}.tmp`, options.countsFile);
  };

  writeCounts();
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { error: { message: String(error) } });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method === "GET" && path === "/__counts") return send(res, 200, counts);
    if (req.method === "POST" && path === "/__reset") {
      counts = {};
      requests.length = 0;
      writeCounts();
      return send(res, 200, {});
    }
    if (req.method === "POST" && path.endsWith("/embeddings")) return embed(req, res);
    const format: WireFormat | undefined =
      req.method !== "POST"
        ? undefined
        : path.endsWith("/chat/completions")
          ? "openai"
          : path === "/v1/messages"
            ? "anthropic"
            : undefined;
    if (format === undefined) {
      return send(res, 404, { error: { message: `no route ${req.method} ${path}` } });
    }
    const body = await readJson(req);
    if (body === undefined) return send(res, 400, { error: { message: "body is not JSON" } });
    // The Messages API's own rules on turns: a request that breaks them is refused, as there.
    const refused = format === "anthropic" ? anthropicTurnsError(body) : undefined;
    if (refused !== undefined) return send(res, 400, anthropicError(400, refused));
    const messages = messagesOf(format, body);
    const key = format === "openai" ? sampleKey(body) : keyOf(messages);
    counts[key] = (counts[key] ?? 0) + 1;
    const request: MockRequest = {
      key,
      format,
      messages,
      tools: toolNamesOf(format, body),
      n: counts[key],
      index: requests.length + 1,
      receivedAt: now(),
      body,
      headers: req.headers,
    };
    requests.push(request);
    writeCounts();
    const action = (await options.respond?.(request)) ??
      options.sequence?.[request.n - 1] ?? { reply: await (options.reply?.(request) ?? key) };
    await answer(res, request, action, options);
  }

  /** /embeddings: each input's letter counts (a–z), so similar texts get similar vectors. */
  async function embed(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const input = body?.input;
    const texts = Array.isArray(input) ? input.map(String) : [String(input)];
    requests.push({
      key: "embeddings",
      format: "openai",
      messages: [],
      tools: [],
      n: 0,
      index: requests.length + 1,
      receivedAt: now(),
      body: body ?? {},
      headers: req.headers,
    });
    const vector = (text: string) =>
      Array.from(
        { length: 26 },
        (_, i) => [...text.toLowerCase()].filter((c) => c.charCodeAt(0) === 97 + i).length,
      );
    send(res, 200, {
      object: "list",
      data: texts.map((text, index) => ({ object: "embedding", index, embedding: vector(text) })),
      model: body?.model ?? "embedding-model",
      usage: { prompt_tokens: texts.join(" ").length, total_tokens: texts.join(" ").length },
    });
  }

  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}/v1`,
    anthropicURL: `http://${options.host ?? "127.0.0.1"}:${port}`,
    port,
    counts: () => ({ ...counts }),
    requests,
    reset: () => {
      counts = {};
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Wall-clock ms since the epoch with performance.now()'s precision and monotonicity. */
const now = (): number => performance.timeOrigin + performance.now();

async function answer(
  res: ServerResponse,
  request: MockRequest,
  action: MockAction,
  options: MockOpenAIOptions,
): Promise<void> {
  if ("hang" in action) return;
  if ("drop" in action) {
    res.socket?.destroy();
    return;
  }
  const latency = action.latencyMs ?? options.latencyMs ?? 0;
  if (latency > 0) await new Promise((resolve) => setTimeout(resolve, latency));
  if ("status" in action) {
    const headers: Record<string, string> =
      action.retryAfter === undefined ? {} : { "retry-after": String(action.retryAfter) };
    const message = `mock error ${action.status}`;
    const fallback =
      request.format === "anthropic"
        ? anthropicError(action.status, message)
        : { error: { message, type: "mock" } };
    send(res, action.status, action.body ?? fallback, headers);
    return;
  }
  const usage = action.usage ?? options.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  if (request.format === "anthropic") {
    if ("message" in action)
      throw new Error("an OpenAI `message` action on a Messages API request");
    const calls = "toolCalls" in action ? action.toolCalls : [];
    const text = "toolCalls" in action ? (action.content ?? "") : action.reply;
    send(res, 200, anthropicReply(String(request.index), request.body.model, text, calls, usage));
    return;
  }
  const choice =
    "toolCalls" in action
      ? {
          index: 0,
          message: {
            role: "assistant",
            content: action.content ?? null,
            tool_calls: action.toolCalls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: JSON.stringify(c.arguments) },
            })),
          },
          finish_reason: "tool_calls",
        }
      : "message" in action
        ? {
            index: 0,
            message: { role: "assistant", ...action.message },
            finish_reason: action.finishReason ?? "stop",
          }
        : {
            index: 0,
            message: { role: "assistant", content: action.reply },
            finish_reason: "stop",
          };
  send(res, 200, {
    id: `chatcmpl-mock-${request.index}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: request.body.model,
    choices: [choice],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    return value !== null && typeof value === "object"
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The content of the last user message: how the mock tells samples apart. */
export function sampleKey(body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  const user = messages.filter(
    (m): m is { role: string; content: unknown } =>
      m !== null && typeof m === "object" && (m as { role?: unknown }).role === "user",
  );
  const content = user.at(-1)?.content;
  return typeof content === "string" ? content : JSON.stringify(content ?? null);
}

/** A mock server in its own process (see mock-openai-server.ts for the flags). */
export interface MockOpenAIProcess {
  url: string;
  port: number;
  pid: number;
  /** GET /__counts. */
  counts(): Promise<Record<string, number>>;
  /** SIGTERM, then wait for the exit. */
  stop(): Promise<void>;
}

/**
 * Spawns `mock-openai-server.ts` under tsx and resolves once it prints its URL.
 *
 * @example const mock = await spawnMockOpenAI(["--latency-ms", "50"]);
 */
export async function spawnMockOpenAI(args: string[] = []): Promise<MockOpenAIProcess> {
  const script = fileURLToPath(new URL("./mock-openai-server.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) =>
      reject(new Error(`mock server exited with code ${code} before listening`)),
    );
  });
  const { url, port } = JSON.parse(first) as { url: string; port: number };
  return {
    url,
    port,
    pid: child.pid ?? -1,
    counts: async () =>
      (await (await fetch(`${url.replace(/\/v1$/, "")}/__counts`)).json()) as Record<
        string,
        number
      >,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}
