import type { Json } from "../core/json.js";
import type {
  ModelMessage,
  ModelTool,
  ReplyParts,
  ReplyTokens,
  ToolChoice,
} from "../core/model-types.js";
import type { Failure } from "./retrying-post.js";

/** One chat message (see ModelMessage); extra members (name, cache_control, …) are passed through. */
export type ChatMessage = ModelMessage;

/** A model call in stet's own terms, before any wire format. */
export interface CanonicalCall {
  /** The bare model id (no `provider:` prefix). */
  model: string;
  messages: ChatMessage[];
  tools?: ModelTool[] | undefined;
  toolChoice?: ToolChoice | undefined;
  temperature?: number | undefined;
  maxTokens?: number | undefined;
  /** Extra request-body fields of the wire format (seed, top_p, response_format, …). */
  params?: Record<string, Json> | undefined;
}

/** A model's reply in stet's own terms: text, tool calls, finish reason, reasoning, message. */
export interface CanonicalReply extends ReplyParts {
  usage?: ReplyTokens;
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
