import type { Json } from "../core/json.js";
import type { UsageFigures } from "../core/types.js";
import type { Failure } from "./retrying-post.js";

/** One chat message; extra members (name, tool_call_id, …) are passed through. */
export type ChatMessage = { role: string; content: Json } & { [key: string]: Json };

/** A model call in stet's own terms, before any wire format. */
export interface CanonicalCall {
  /** The bare model id (no `provider:` prefix). */
  model: string;
  messages: ChatMessage[];
  temperature?: number | undefined;
  maxTokens?: number | undefined;
  /** Extra request-body fields (seed, top_p, tools, response_format, …). */
  params?: Record<string, Json> | undefined;
}

/** A model's reply in stet's own terms. */
export interface CanonicalReply {
  /** The assistant's text ("" when the reply had no content). */
  content: string;
  /** Input tokens all of them (cached included), output tokens all of them (reasoning included). */
  usage?: Omit<UsageFigures, "costUsd">;
}

/**
 * A wire format and its defaults: where requests go when nothing says otherwise, where the key
 * comes from, how a call becomes a request and a response a reply. The HTTP layer
 * (`retrying-post.ts`) sends what a provider builds; it knows no format.
 */
export interface Provider<KeyEnv extends string = string> {
  /** The provider's name in a call's identity, e.g. "openai". */
  readonly name: string;
  readonly defaultBaseURL: string;
  /** The environment variable of the base URL, e.g. OPENAI_BASE_URL. */
  readonly baseUrlEnv: string;
  /** The environment variable of the API key, e.g. OPENAI_API_KEY. */
  readonly apiKeyEnv: KeyEnv;
  /** The headers every request carries (content type, credentials), before the caller's. */
  headers(apiKey: string | undefined): Record<string, string>;
  /** The request of a chat call: a path under the base URL and a JSON body. */
  chatRequest(call: CanonicalCall): { path: string; body: Record<string, Json> };
  /** A 2xx body as a reply, or a Failure; `says` renders the server's words (see ResolvedPost). */
  chatReply(text: string, says: (text: string) => string): CanonicalReply | Failure;
  /** The server's own words in an error body, "" when there are none. */
  errorDetail(text: string): string;
}
