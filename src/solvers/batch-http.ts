import { redactUrl } from "./retrying-post.js";
import { sleep } from "./backoff.js";
import { SolverError } from "./solver-error.js";

/** How a batch client reaches its endpoint: the base URL, the headers, the key to blank. */
export interface BatchEndpoint {
  baseURL: string;
  headers: Record<string, string>;
  secret: string | undefined;
  /** The server's own words in an error body. */
  errorDetail: (text: string) => string;
}

const RETRIES = 5;

/**
 * One request of a batch protocol (upload, create, look, list, download, cancel): retried on
 * 429, 5xx and dropped connections (a batch call is not billed: re-sending one costs nothing,
 * and a create re-sent after a lost answer is found by its nonce on the next resume); any other
 * status fails at once. The body as text; errors name the URL and status, never the key.
 *
 * @example const text = await batchRequest(endpoint, "GET", "/batches/batch_1");
 */
export async function batchRequest(
  endpoint: BatchEndpoint,
  method: "GET" | "POST",
  path: string,
  body?: string | FormData,
): Promise<string> {
  const url = path.startsWith("http") ? path : `${endpoint.baseURL}${path}`;
  const headers = { ...endpoint.headers };
  // FormData sets its own multipart content type with the boundary.
  if (body instanceof FormData) delete headers["content-type"];
  if (body === undefined) delete headers["content-type"];
  const what = `${method} ${redactUrl(url)}`;
  let last = "";
  for (let i = 0; i <= RETRIES; i++) {
    if (i > 0) await sleep(Math.min(500 * 2 ** (i - 1), 8_000));
    let response: Response;
    try {
      response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
    } catch (error) {
      last = `${what} failed: ${blank(endpoint, error instanceof Error ? error.message : String(error))}`;
      continue;
    }
    const text = await response.text();
    if (response.ok) return text;
    const says = blank(endpoint, endpoint.errorDetail(text));
    last = `${what} failed: HTTP ${response.status}${says === "" ? "" : `: ${says}`}`;
    if (response.status !== 429 && response.status < 500) {
      throw new SolverError("provider", last, { status: response.status });
    }
  }
  throw new SolverError("provider", last);
}

function blank(endpoint: BatchEndpoint, text: string): string {
  return endpoint.secret ? text.split(endpoint.secret).join("***") : text;
}

/** Parses a JSON body of a batch protocol, or fails naming what it was. */
export function jsonOf(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SolverError("provider", `${what}: the answer is not JSON`);
  }
}

/** The JSONL lines of a results file, each parsed. */
export function jsonLines(text: string, what: string): unknown[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => jsonOf(line, what));
}
