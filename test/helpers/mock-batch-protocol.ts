import type { IncomingHttpHeaders } from "node:http";
import { anthropicError, anthropicReply } from "./mock-wire.js";
import type { BatchPoint } from "./mock-batch.js";

type Obj = Record<string, unknown>;

/** One request of a batch, and what becomes of it when the batch ends. */
export interface BatchItem {
  customId: string;
  key: string;
  body: Obj;
  outcome: "succeeded" | "failed" | "expired";
}

export interface BatchState {
  id: string;
  protocol: "openai" | "anthropic";
  createdAt: number;
  endsAt: number;
  status: "running" | "completed" | "expired" | "cancelled";
  metadata: Record<string, string>;
  inputFileId?: string;
  window?: string;
  items: BatchItem[];
  /** Polls answered while it was still in progress. */
  runningPolls: number;
}

export interface ProtocolParts {
  batches: BatchState[];
  files: Map<string, string>;
  usage: { prompt_tokens: number; completion_tokens: number };
  reply: (key: string) => string;
  newBatch: (
    protocol: "openai" | "anthropic",
    items: { customId: string; body: Obj }[],
    extra: Partial<BatchState>,
  ) => BatchState;
  settle: (state: BatchState) => void;
  cancel: (state: BatchState) => void;
  hold: (point: BatchPoint, batchId?: string) => Promise<void>;
}

type Answer = { status: number; body: unknown } | undefined;

/** The routes of both protocols over the server's state. */
export function batchRoutes(p: ProtocolParts) {
  return async (
    method: string,
    url: string,
    raw: Buffer,
    headers: IncomingHttpHeaders,
  ): Promise<Answer> => {
    const { pathname, searchParams } = new URL(url, "http://mock");
    const find = (id: string | undefined) => p.batches.find((b) => b.id === id);
    let m: RegExpMatchArray | null;
    if (method === "POST" && pathname === "/v1/files") {
      return upload(p, raw, String(headers["content-type"] ?? ""));
    }
    if (method === "POST" && pathname === "/v1/batches") return createOpenAI(p, raw);
    if (method === "GET" && pathname === "/v1/batches") {
      await p.hold("list");
      return { status: 200, body: listOf(p, "openai", searchParams, openaiBatch) };
    }
    if ((m = pathname.match(/^\/v1\/batches\/([^/]+)(\/cancel)?$/))) {
      const state = find(m[1]);
      if (!state) return { status: 404, body: { error: { message: "no such batch" } } };
      if (m[2] && method === "POST") {
        p.cancel(state);
        return { status: 200, body: { ...openaiBatch(state), status: "cancelling" } };
      }
      p.settle(state);
      await p.hold(pollPoint(state), state.id);
      return { status: 200, body: openaiBatch(state) };
    }
    if ((m = pathname.match(/^\/v1\/files\/file-(out|err)-(.+)\/content$/))) {
      const state = find(m[2]);
      if (!state) return { status: 404, body: { error: { message: "no such file" } } };
      await p.hold("download", state.id);
      return { status: 200, body: openaiLines(p, state, m[1] === "out") };
    }
    if (method === "POST" && pathname === "/v1/messages/batches") return createAnthropic(p, raw);
    if (method === "GET" && pathname === "/v1/messages/batches") {
      await p.hold("list");
      return { status: 200, body: listOf(p, "anthropic", searchParams, anthropicBatch) };
    }
    if ((m = pathname.match(/^\/v1\/messages\/batches\/([^/]+)(\/cancel|\/results)?$/))) {
      const state = find(m[1]);
      if (!state) return { status: 404, body: anthropicError(404, "no such batch") };
      if (m[2] === "/cancel" && method === "POST") {
        p.cancel(state);
        return { status: 200, body: { ...anthropicBatch(state), processing_status: "canceling" } };
      }
      p.settle(state);
      if (m[2] === "/results") {
        await p.hold("download", state.id);
        return { status: 200, body: anthropicLines(p, state) };
      }
      await p.hold(pollPoint(state), state.id);
      return { status: 200, body: anthropicBatch(state) };
    }
    return undefined;
  };
}

/** POST /v1/files: multipart with `purpose` = batch and the JSONL `file`. */
async function upload(p: ProtocolParts, raw: Buffer, type: string): Promise<Answer> {
  const boundary = type.match(/boundary=(?:"([^"]+)"|([^;]+))/);
  if (!boundary) return { status: 400, body: { error: { message: "not multipart" } } };
  const parts = raw.toString("utf8").split(`--${boundary[1] ?? boundary[2]}`);
  const field = (name: string) => {
    const part = parts.find((x) => x.includes(`name="${name}"`));
    return part?.slice(part.indexOf("\r\n\r\n") + 4, part.lastIndexOf("\r\n"));
  };
  const purpose = field("purpose");
  const file = field("file");
  if (purpose !== "batch" || file === undefined) {
    return { status: 400, body: { error: { message: "purpose batch and a file are required" } } };
  }
  const id = `file-in-${p.files.size + 1}`;
  p.files.set(id, file);
  await p.hold("upload");
  const body = { id, object: "file", bytes: file.length, created_at: now(), purpose: "batch" };
  return { status: 200, body: { ...body, filename: "batch.jsonl" } };
}

async function createOpenAI(p: ProtocolParts, raw: Buffer): Promise<Answer> {
  const body = JSON.parse(raw.toString("utf8")) as Obj;
  const input = p.files.get(String(body.input_file_id));
  const bad = (message: string): Answer => ({ status: 400, body: { error: { message } } });
  if (input === undefined) return bad("input_file_id: no such file");
  if (body.endpoint !== "/v1/chat/completions") return bad("endpoint: only /v1/chat/completions");
  if (body.completion_window !== "24h") return bad("completion_window: only 24h");
  const items = input
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map(
      (line) => JSON.parse(line) as { custom_id: string; method: string; url: string; body: Obj },
    );
  if (items.some((i) => i.method !== "POST" || i.url !== "/v1/chat/completions")) {
    return bad("every line must POST /v1/chat/completions");
  }
  if (new Set(items.map((i) => i.custom_id)).size !== items.length) {
    return bad("custom_id values must be unique");
  }
  const state = p.newBatch(
    "openai",
    items.map((i) => ({ customId: i.custom_id, body: i.body })),
    {
      metadata: (body.metadata ?? {}) as Record<string, string>,
      inputFileId: String(body.input_file_id),
      window: "24h",
    },
  );
  await p.hold("create", state.id);
  return { status: 200, body: openaiBatch(state) };
}

async function createAnthropic(p: ProtocolParts, raw: Buffer): Promise<Answer> {
  const body = JSON.parse(raw.toString("utf8")) as {
    requests?: { custom_id: string; params: Obj }[];
  };
  const requests = body.requests ?? [];
  if (requests.some((r) => !/^[a-zA-Z0-9_-]{1,64}$/.test(r.custom_id))) {
    return { status: 400, body: anthropicError(400, "custom_id must match ^[a-zA-Z0-9_-]{1,64}$") };
  }
  const state = p.newBatch(
    "anthropic",
    requests.map((r) => ({ customId: r.custom_id, body: r.params })),
    {},
  );
  await p.hold("create", state.id);
  return { status: 200, body: anthropicBatch(state) };
}

function listOf(
  p: ProtocolParts,
  protocol: "openai" | "anthropic",
  params: URLSearchParams,
  render: (s: BatchState) => Obj,
): Obj {
  const all = p.batches.filter((b) => b.protocol === protocol).reverse();
  const after = params.get(protocol === "openai" ? "after" : "after_id");
  const from = after === null ? 0 : all.findIndex((b) => b.id === after) + 1;
  const limit = Number(params.get("limit") ?? 20);
  const page = all.slice(from, from + limit).map((b) => (p.settle(b), render(b)));
  const more = from + limit < all.length;
  const ids = { first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null };
  return protocol === "openai"
    ? { object: "list", data: page, ...ids, has_more: more }
    : { data: page, ...ids, has_more: more };
}

const now = () => Math.floor(Date.now() / 1000);

function openaiBatch(s: BatchState): Obj {
  const ended = s.status !== "running";
  const counts = countsOf(s);
  return {
    id: s.id,
    object: "batch",
    endpoint: "/v1/chat/completions",
    errors: null,
    input_file_id: s.inputFileId,
    completion_window: "24h",
    status: s.status === "running" ? "in_progress" : s.status,
    output_file_id: ended && counts.succeeded > 0 ? `file-out-${s.id}` : null,
    error_file_id: ended && counts.succeeded < s.items.length ? `file-err-${s.id}` : null,
    created_at: Math.floor(s.createdAt / 1000),
    in_progress_at: Math.floor(s.createdAt / 1000),
    expires_at: Math.floor(s.createdAt / 1000) + 86_400,
    request_counts: {
      total: s.items.length,
      completed: ended ? counts.succeeded : 0,
      failed: ended ? s.items.length - counts.succeeded : 0,
    },
    metadata: s.metadata,
  };
}

function countsOf(s: BatchState): { succeeded: number; failed: number; expired: number } {
  const cancelled = s.status === "cancelled";
  const count = (o: BatchItem["outcome"]) =>
    cancelled ? 0 : s.items.filter((i) => i.outcome === o).length;
  return { succeeded: count("succeeded"), failed: count("failed"), expired: count("expired") };
}

function openaiLines(p: ProtocolParts, s: BatchState, output: boolean): string {
  const lines = s.items
    .filter((i) => s.status !== "cancelled" && (i.outcome === "succeeded") === output)
    .map((item, n) => {
      const id = `batch_req_${s.id}_${n}`;
      if (item.outcome === "expired") {
        const error = {
          code: "batch_expired",
          message: "This request could not be executed before the completion window expired.",
        };
        return { id, custom_id: item.customId, response: null, error };
      }
      const body =
        item.outcome === "failed"
          ? {
              error: {
                message: "The server had an error processing the request",
                type: "server_error",
              },
            }
          : completion(p, item);
      const status_code = item.outcome === "failed" ? 500 : 200;
      return {
        id,
        custom_id: item.customId,
        response: { status_code, request_id: id, body },
        error: null,
      };
    });
  const cancelled =
    s.status === "cancelled" && !output
      ? s.items.map((item) => ({
          id: `batch_req_${item.customId}`,
          custom_id: item.customId,
          response: null,
          error: { code: "batch_cancelled", message: "This request was cancelled." },
        }))
      : [];
  return [...lines, ...cancelled].map((l) => JSON.stringify(l) + "\n").join("");
}

function completion(p: ProtocolParts, item: BatchItem): Obj {
  return {
    id: `chatcmpl-${item.customId}`,
    object: "chat.completion",
    created: now(),
    model: item.body.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: p.reply(item.key) },
        finish_reason: "stop",
      },
    ],
    usage: { ...p.usage, total_tokens: p.usage.prompt_tokens + p.usage.completion_tokens },
  };
}

function anthropicBatch(s: BatchState): Obj {
  const ended = s.status !== "running";
  const counts = countsOf(s);
  return {
    id: s.id,
    type: "message_batch",
    processing_status: ended ? "ended" : "in_progress",
    request_counts: {
      processing: ended ? 0 : s.items.length,
      succeeded: ended ? counts.succeeded : 0,
      errored: ended ? counts.failed : 0,
      canceled: s.status === "cancelled" ? s.items.length : 0,
      expired: ended ? counts.expired : 0,
    },
    ended_at: ended ? new Date(s.endsAt).toISOString() : null,
    created_at: new Date(s.createdAt).toISOString(),
    expires_at: new Date(s.createdAt + 86_400_000).toISOString(),
    cancel_initiated_at: s.status === "cancelled" ? new Date().toISOString() : null,
    archived_at: null,
    results_url: ended ? `/v1/messages/batches/${s.id}/results` : null,
  };
}

function anthropicLines(p: ProtocolParts, s: BatchState): string {
  if (s.status === "running") return "";
  return s.items
    .map((item) => {
      if (s.status === "cancelled")
        return { custom_id: item.customId, result: { type: "canceled" } };
      if (item.outcome === "expired")
        return { custom_id: item.customId, result: { type: "expired" } };
      if (item.outcome === "failed") {
        const error = anthropicError(500, "Internal server error");
        return { custom_id: item.customId, result: { type: "errored", error } };
      }
      const message = anthropicReply(
        item.customId,
        item.body.model,
        p.reply(item.key),
        [],
        p.usage,
      );
      return { custom_id: item.customId, result: { type: "succeeded", message } };
    })
    .map((l) => JSON.stringify(l) + "\n")
    .join("");
}

/** A poll's point: `poll` while the batch is in progress (counted), else `poll-ended`. */
function pollPoint(state: BatchState): "poll" | "poll-ended" {
  if (state.status !== "running") return "poll-ended";
  state.runningPolls++;
  return "poll";
}
