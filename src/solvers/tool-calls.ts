import type { Json } from "../core/json.js";
import type { ModelMessage, ToolCall } from "../core/model-types.js";

type JsonObject = { [key: string]: Json };

/**
 * The tool calls an assistant message carries, in canonical form, whether it spells them
 * canonically (`toolCalls`) or as OpenAI does (`tool_calls`, arguments as JSON text).
 *
 * @example toolCallsOf({ role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] })
 * // [{ id: "c1", name: "f", arguments: {} }]
 */
export function toolCallsOf(message: ModelMessage): ToolCall[] {
  const canonical = message.toolCalls;
  if (Array.isArray(canonical)) return canonical.filter(isObject).map(canonicalCall);
  const wire = message.tool_calls;
  if (!Array.isArray(wire)) return [];
  return wire.filter(isObject).map((call) => {
    const fn = isObject(call.function) ? call.function : {};
    return {
      id: String(call.id ?? ""),
      name: String(fn.name ?? ""),
      arguments: parseArguments(fn.arguments),
    };
  });
}

/**
 * The id of the call a tool message answers (`toolCallId`, or OpenAI's `tool_call_id`).
 *
 * @example toolCallIdOf({ role: "tool", content: "4", tool_call_id: "c1" }) // "c1"
 */
export function toolCallIdOf(message: ModelMessage): string {
  return String(message.toolCallId ?? message.tool_call_id ?? "");
}

/**
 * Tool-call arguments as JSON: the parsed text, or the text itself when it is not JSON (a model
 * may emit broken JSON; the agent decides what to do with it).
 *
 * @example parseArguments('{"x":1}') // { x: 1 }
 */
export function parseArguments(value: Json | undefined): Json {
  if (typeof value !== "string") return value ?? {};
  if (value.trim() === "") return {};
  try {
    return JSON.parse(value) as Json;
  } catch {
    return value;
  }
}

/**
 * The assistant message of a reply in canonical form: `toolCalls` only when there are some,
 * and any provider-specific members (`reasoning`, Anthropic's `thinking` blocks) given.
 *
 * @example replyMessage("hi", []) // { role: "assistant", content: "hi" }
 */
export function replyMessage(
  content: string,
  toolCalls: readonly ToolCall[],
  extra: JsonObject = {},
): ModelMessage {
  return {
    role: "assistant",
    content,
    ...(toolCalls.length === 0 ? {} : { toolCalls: [...toolCalls] }),
    ...extra,
  };
}

function canonicalCall(call: JsonObject): ToolCall {
  return {
    id: String(call.id ?? ""),
    name: String(call.name ?? ""),
    arguments: parseArguments(call.arguments),
  };
}

/**
 * Whether a JSON value is an object (not null, not an array).
 *
 * @example isObject({ a: 1 }) // true
 */
export function isObject(value: Json | undefined): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
