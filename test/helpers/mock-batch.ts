import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { keyOf, messagesOf } from "./mock-wire.js";
import { batchRoutes, type BatchState, type BatchItem } from "./mock-batch-protocol.js";

/** A point of the batch protocol where a test may hold the answer (and kill the client meanwhile). */
export type BatchPoint = "upload" | "create" | "poll" | "poll-ended" | "download" | "list";

export interface MockBatchOptions {
  /** Milliseconds from a batch's creation until it ends. Default 0. */
  delayMs?: number;
  /**
   * Polls a batch answers as in progress before it may end, however late they come (default 0):
   * a test holding the `poll` point reaches it on a loaded machine too.
   */
  minRunningPolls?: number;
  /** The assistant's text for a request (its key: the last user message). Default: "answer: <key>". */
  reply?: (key: string) => string;
  /** Default { prompt_tokens: 10, completion_tokens: 5 }. */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** A request that fails inside the batch (`n`: the key's n-th submission). */
  fail?: (key: string, n: number) => boolean;
  /** A request that expires with the batch window (`n`: the key's n-th submission). */
  expire?: (key: string, n: number) => boolean;
  /** Awaited before the server answers at a point: a test kills the client there. */
  hold?: (point: BatchPoint, batchId: string | undefined) => Promise<void> | void;
}

/** Everything the server saw, for assertions. */
export interface MockBatchServer {
  /** OpenAI base URL, e.g. http://127.0.0.1:41234/v1. */
  url: string;
  /** Anthropic base URL, e.g. http://127.0.0.1:41234 (Message Batches at /v1/messages/batches). */
  anthropicURL: string;
  /** Batches created, in order (both protocols). */
  batches: BatchState[];
  /** Requests billed per key (processed: succeeded or failed inside a batch), both protocols. */
  billed(): Record<string, number>;
  /** Submissions per key (every batch it was in). */
  submitted(): Record<string, number>;
  /** Every request seen, as "METHOD path". */
  log: string[];
  close(): Promise<void>;
}

/**
 * A local server of both batch protocols with their real shapes: OpenAI's files and batches
 * (POST /v1/files multipart, POST /v1/batches, GET /v1/batches[/:id], POST …/cancel,
 * GET /v1/files/:id/content) and Anthropic's Message Batches (POST /v1/messages/batches,
 * GET /v1/messages/batches[/:id], GET …/results, POST …/cancel). A batch ends `delayMs` after its
 * creation; requests can fail or expire inside it; it counts creations and billed requests.
 *
 * @example const mock = await startMockBatch({ delayMs: 200 }); // OPENAI_BASE_URL=mock.url
 */
export async function startMockBatch(options: MockBatchOptions = {}): Promise<MockBatchServer> {
  const batches: BatchState[] = [];
  const billed: Record<string, number> = {};
  const submitted: Record<string, number> = {};
  const log: string[] = [];
  const files = new Map<string, string>();
  const usage = options.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  const reply = options.reply ?? ((key: string) => `answer: ${key}`);
  const hold = async (point: BatchPoint, id?: string) => options.hold?.(point, id);

  const newBatch = (
    protocol: "openai" | "anthropic",
    items: { customId: string; body: Record<string, unknown> }[],
    extra: Partial<BatchState>,
  ): BatchState => {
    const state: BatchState = {
      id: `${protocol === "openai" ? "batch" : "msgbatch"}_${randomBytes(8).toString("hex")}`,
      protocol,
      createdAt: Date.now(),
      endsAt: Date.now() + (options.delayMs ?? 0),
      status: "running",
      runningPolls: 0,
      metadata: {},
      items: items.map((item): BatchItem => {
        const key = keyOf(messagesOf(protocol, item.body));
        const n = (submitted[key] = (submitted[key] ?? 0) + 1);
        const outcome = options.fail?.(key, n)
          ? "failed"
          : options.expire?.(key, n)
            ? "expired"
            : "succeeded";
        return { customId: item.customId, key, body: item.body, outcome };
      }),
      ...extra,
    };
    batches.push(state);
    return state;
  };

  /** Ends a batch whose time came: its processed requests are billed, once. */
  const settle = (state: BatchState): void => {
    if (state.status !== "running" || Date.now() < state.endsAt) return;
    if (state.runningPolls < (options.minRunningPolls ?? 0)) return;
    state.status = state.items.some((i) => i.outcome === "expired") ? "expired" : "completed";
    for (const item of state.items) {
      if (item.outcome !== "expired") billed[item.key] = (billed[item.key] ?? 0) + 1;
    }
  };
  const cancel = (state: BatchState): void => {
    if (state.status !== "running") return;
    state.status = "cancelled";
  };

  const routes = batchRoutes({ batches, files, usage, reply, newBatch, settle, cancel, hold });
  const server = createServer((req, res) => {
    log.push(`${req.method} ${req.url}`);
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { error: { message: String(error) } });
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await bodyOf(req);
    const answer = await routes(req.method ?? "GET", req.url ?? "/", raw, req.headers);
    if (answer === undefined) return send(res, 404, { error: { message: "not found" } });
    if (typeof answer.body === "string") {
      res.writeHead(answer.status, { "content-type": "application/jsonl" });
      res.end(answer.body);
      return;
    }
    send(res, answer.status, answer.body);
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    anthropicURL: `http://127.0.0.1:${port}`,
    batches,
    billed: () => ({ ...billed }),
    submitted: () => ({ ...submitted }),
    log,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function bodyOf(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
