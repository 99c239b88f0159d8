import type { Json } from "../core/json.js";
import type { ModelMessage, ModelTool, ToolChoice } from "../core/model-types.js";
import { isObject, toolCallIdOf, toolCallsOf } from "./tool-calls.js";

/** Canonical members the OpenAI format spells otherwise or does not know. */
const CANONICAL_ONLY = ["toolCalls", "toolCallId", "reasoning", "thinking"];

/**
 * Messages in OpenAI's chat format. Messages already in it (every eval written before stet's
 * canonical form) are sent as they are, the same array: the fast path allocates nothing.
 * Canonical `toolCalls` become `tool_calls` (arguments as JSON text), `toolCallId`
 * `tool_call_id`, image parts `image_url` parts; reasoning members are dropped.
 *
 * @example openaiMessages([{ role: "tool", toolCallId: "c1", content: "4" }])
 * // [{ role: "tool", tool_call_id: "c1", content: "4" }]
 */
export function openaiMessages(messages: ModelMessage[]): ModelMessage[] {
  if (!messages.some(needsMapping)) return messages;
  return messages.map((message) => (needsMapping(message) ? toWire(message) : message));
}

function needsMapping(message: ModelMessage): boolean {
  for (const key of CANONICAL_ONLY) if (key in message) return true;
  return Array.isArray(message.content) && message.content.some(isImagePart);
}

function toWire(message: ModelMessage): ModelMessage {
  const wire: ModelMessage = { role: message.role, content: message.content };
  for (const [key, value] of Object.entries(message)) {
    if (!CANONICAL_ONLY.includes(key) && key !== "role" && key !== "content") wire[key] = value;
  }
  if ("toolCalls" in message) {
    const calls = toolCallsOf(message);
    if (calls.length > 0) {
      wire.tool_calls = calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: JSON.stringify(call.arguments) },
      }));
      // OpenAI's assistant turn with tool calls and no text has null content.
      if (wire.content === "") wire.content = null;
    }
  }
  if ("toolCallId" in message) wire.tool_call_id = toolCallIdOf(message);
  if (Array.isArray(wire.content)) wire.content = wire.content.map(imagePart);
  return wire;
}

function isImagePart(part: Json): boolean {
  return isObject(part) && part.type === "image" && typeof part.url === "string";
}

function imagePart(part: Json): Json {
  if (!isImagePart(part) || !isObject(part)) return part;
  const { type: _type, url, ...rest } = part;
  return { ...rest, type: "image_url", image_url: { url: url ?? "" } };
}

/**
 * Canonical tools as OpenAI function tools.
 *
 * @example openaiTools([{ name: "add", parameters: { type: "object" } }])[0].type // "function"
 */
export function openaiTools(tools: readonly ModelTool[]): Json[] {
  return tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.parameters,
    },
  }));
}

/**
 * A canonical tool choice as OpenAI's `tool_choice`.
 *
 * @example openaiToolChoice({ name: "add" }) // { type: "function", function: { name: "add" } }
 */
export function openaiToolChoice(choice: ToolChoice): Json {
  return typeof choice === "string"
    ? choice
    : { type: "function", function: { name: choice.name } };
}
