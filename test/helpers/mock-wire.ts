/**
 * The two wire formats the mock model server speaks: OpenAI's chat completions and Anthropic's
 * Messages API (https://docs.anthropic.com/en/api/messages). A request of either is read into
 * one neutral view (MockMessage) so a test scripts its model once for both; a reply is written
 * in the format the request came in.
 */

export type WireFormat = "openai" | "anthropic";

/** A tool call as either format carries it, its arguments parsed. */
export interface MockToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

/**
 * One message of a request, whichever its wire format: OpenAI's messages as they are; an
 * Anthropic `system` as a system message, a user turn's `tool_result` blocks as tool messages
 * (in block order) and its text blocks as a user message, an assistant turn's `tool_use` blocks
 * as its toolCalls.
 */
export interface MockMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  toolCalls?: MockToolCall[];
  /** A tool message's: the id of the call it answers. */
  toolCallId?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? (v as unknown[]) : []);

/** Text of a string, or of the text parts or blocks of a list. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return list(content)
    .map((part) => (isObj(part) && part.type === "text" ? String(part.text) : ""))
    .join("");
}

/** The request's messages in the neutral view. */
export function messagesOf(format: WireFormat, body: Obj): MockMessage[] {
  return format === "openai" ? openaiMessages(body) : anthropicMessages(body);
}

/** The names of the tools the request offers. */
export function toolNamesOf(format: WireFormat, body: Obj): string[] {
  return list(body.tools).map((tool) =>
    String(
      isObj(tool) ? (format === "openai" && isObj(tool.function) ? tool.function : tool).name : "",
    ),
  );
}

function openaiMessages(body: Obj): MockMessage[] {
  return list(body.messages)
    .filter(isObj)
    .map((m) => {
      const role = String(m.role) as MockMessage["role"];
      const calls = list(m.tool_calls)
        .filter(isObj)
        .map((call) => {
          const fn = isObj(call.function) ? call.function : {};
          return { id: String(call.id), name: String(fn.name), arguments: parse(fn.arguments) };
        });
      return {
        role: role === ("developer" as string) ? "system" : role,
        content: textOf(m.content),
        ...(calls.length === 0 ? {} : { toolCalls: calls }),
        ...(typeof m.tool_call_id === "string" ? { toolCallId: m.tool_call_id } : {}),
      };
    });
}

function parse(text: unknown): unknown {
  try {
    return JSON.parse(String(text));
  } catch {
    return text;
  }
}

function anthropicMessages(body: Obj): MockMessage[] {
  const out: MockMessage[] = [];
  if (body.system !== undefined) out.push({ role: "system", content: textOf(body.system) });
  for (const turn of list(body.messages).filter(isObj)) {
    const blocks =
      typeof turn.content === "string"
        ? [{ type: "text", text: turn.content }]
        : list(turn.content).filter(isObj);
    if (turn.role === "assistant") {
      const calls = blocks
        .filter((b) => b.type === "tool_use")
        .map((b) => ({ id: String(b.id), name: String(b.name), arguments: b.input }));
      out.push({
        role: "assistant",
        content: textOf(blocks),
        ...(calls.length === 0 ? {} : { toolCalls: calls }),
      });
      continue;
    }
    for (const b of blocks.filter((b) => b.type === "tool_result")) {
      out.push({ role: "tool", toolCallId: String(b.tool_use_id), content: textOf(b.content) });
    }
    if (blocks.some((b) => b.type === "text")) out.push({ role: "user", content: textOf(blocks) });
  }
  return out;
}

/** How the mock tells samples apart: the text of the request's last user message. */
export function keyOf(messages: readonly MockMessage[]): string {
  return messages.filter((m) => m.role === "user").at(-1)?.content ?? "null";
}

/** Token counts as the mock is told them (OpenAI's names). */
export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

/**
 * A Messages API reply: text, then tool_use blocks; stop_reason `tool_use` when it calls a tool.
 * The cached part of the prompt is its cache_read_input_tokens (Anthropic's input_tokens leave
 * it out).
 */
export function anthropicReply(
  id: string,
  model: unknown,
  text: string,
  calls: readonly MockToolCall[],
  usage: WireUsage,
): Obj {
  const cached = usage.prompt_tokens_details?.cached_tokens;
  return {
    id: `msg_mock_${id}`,
    type: "message",
    role: "assistant",
    model,
    content: [
      ...(text === "" ? [] : [{ type: "text", text }]),
      ...calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: c.arguments })),
    ],
    stop_reason: calls.length > 0 ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: {
      input_tokens: usage.prompt_tokens - (cached ?? 0),
      output_tokens: usage.completion_tokens,
      ...(cached === undefined ? {} : { cache_read_input_tokens: cached }),
    },
  };
}

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  529: "overloaded_error",
};

/**
 * What the Messages API refuses in a request's turns, as its 400 says it, or undefined: no
 * messages, a first turn that is not the user's, two turns of one role in a row.
 */
export function anthropicTurnsError(body: Obj): string | undefined {
  const turns = list(body.messages).filter(isObj);
  if (turns.length === 0) return "messages: at least one message is required";
  if (turns[0]!.role !== "user") return 'messages: first message must use the "user" role';
  const repeated = turns.findIndex((t, i) => i > 0 && t.role === turns[i - 1]!.role);
  if (repeated === -1) return undefined;
  return `messages: roles must alternate between "user" and "assistant", but found multiple "${String(turns[repeated]!.role)}" roles in a row`;
}

/** A Messages API error body for an HTTP status. */
export function anthropicError(status: number, message: string): Obj {
  return { type: "error", error: { type: ERROR_TYPES[status] ?? "api_error", message } };
}
