/** The HTTP API as the UI uses it: JSON requests, SSE over fetch, and the optional bearer token. */
import type { EventMessage } from "../api/contract.js";

const TOKEN_KEY = "stet.token";

/** The API refused the request; `code` is its stable error code (`run_active`, …). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string): void {
  sessionStorage.setItem(TOKEN_KEY, value);
}

function headers(json: boolean): Headers {
  const result = new Headers();
  const bearer = token();
  if (bearer) result.set("authorization", `Bearer ${bearer}`);
  if (json) result.set("content-type", "application/json");
  return result;
}

async function send(path: string, init: { method?: string; body?: unknown; signal?: AbortSignal }) {
  const response = await fetch(path, {
    method: init.method ?? "GET",
    headers: headers(init.body !== undefined),
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  if (!response.ok) throw await failure(response);
  return response;
}

async function failure(response: Response): Promise<ApiFailure> {
  const body = (await response.json().catch(() => null)) as {
    error?: { code?: string; message?: string };
  } | null;
  const code = body?.error?.code ?? `http_${response.status}`;
  return new ApiFailure(response.status, code, body?.error?.message ?? response.statusText);
}

/**
 * GETs (or sends) JSON.
 *
 * @example const { runs } = await getJson<RunList>("/api/runs?limit=50");
 */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await send(path, signal ? { signal } : {})).json() as Promise<T>;
}

export async function postJson<T>(path: string, body: unknown = {}): Promise<T> {
  return (await send(path, { method: "POST", body })).json() as Promise<T>;
}

interface SseEvent {
  event: string;
  data: unknown;
}

/**
 * Reads a server-sent event stream over fetch (EventSource can neither POST nor send a bearer
 * token), its events as the contract's `Events` map names them. Ends when the server ends the
 * stream or `signal` aborts.
 *
 * @example for await (const e of sse<FollowEvents>("/api/runs/r_1/events", {}, signal)) e.event;
 */
export async function* sse<Events>(
  path: string,
  init: { method?: string; body?: unknown },
  signal: AbortSignal,
): AsyncGenerator<EventMessage<Events>> {
  const response = await send(path, { ...init, signal });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const parsed = parseBlock(block);
        // The server's streams are typed against the same contract (api/contract.ts).
        if (parsed) yield parsed as EventMessage<Events>;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function parseBlock(block: string): SseEvent | undefined {
  let event = "message";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (data.length === 0) return undefined;
  try {
    return { event, data: JSON.parse(data.join("\n")) as unknown };
  } catch {
    return { event, data: data.join("\n") };
  }
}
