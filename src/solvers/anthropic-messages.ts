import type { Json } from "../core/json.js";
import type { ModelMessage, ModelTool, ToolChoice } from "../core/model-types.js";
import { isObject, toolCallIdOf, toolCallsOf } from "./tool-calls.js";

type Block = { [key: string]: Json };
type Turn = { role: "user" | "assistant"; content: Block[] };

/**
 * Canonical (or OpenAI-format) messages as the Messages API's `system` and `messages`: system
 * messages hoisted to the top level, text and image parts as content blocks, an assistant's
 * tool calls as `tool_use` blocks (after its `thinking` blocks, as the API requires), a tool
 * message as a user turn's `tool_result` block. Consecutive turns of one role are merged (the
 * tool results of one assistant turn go back in one user turn). A message's `cache_control`
 * goes on its last block; a part's stays on its block. A conversation that opens with the
 * assistant's turn (what a simulated user's model is sent: its own opening message first) gets
 * `OPENING_TURN` before it: the API refuses a first turn that is not the user's.
 *
 * @example anthropicMessages([{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }])
 * // { system: [{ type: "text", text: "Be brief." }], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }] }
 */
export function anthropicMessages(messages: readonly ModelMessage[]): {
  system: Block[];
  messages: Turn[];
} {
  const system: Block[] = [];
  const turns: Turn[] = [];
  for (const message of messages) {
    const blocks = withCacheControl(blocksOf(message), message.cache_control);
    if (message.role === "system" || message.role === "developer") {
      system.push(...blocks);
      continue;
    }
    const role = message.role === "assistant" ? "assistant" : "user";
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  }
  if (turns[0]?.role === "assistant") {
    turns.unshift({ role: "user", content: [{ type: "text", text: OPENING_TURN }] });
  }
  return { system, messages: turns };
}

/** The user turn before a conversation that opens with the assistant's (see anthropicMessages). */
export const OPENING_TURN = "(The conversation begins.)";

function blocksOf(message: ModelMessage): Block[] {
  if (message.role === "tool") {
    const content = partsOf(message.content);
    return [
      {
        type: "tool_result",
        tool_use_id: toolCallIdOf(message),
        content: content.length === 0 ? "" : content,
        ...(message.isError === true ? { is_error: true } : {}),
      },
    ];
  }
  if (message.role !== "assistant") return partsOf(message.content);
  const thinking = Array.isArray(message.thinking) ? message.thinking.filter(isObject) : [];
  const toolUses = toolCallsOf(message).map((call) => ({
    type: "tool_use",
    id: call.id,
    name: call.name,
    input: isObject(call.arguments) ? call.arguments : {},
  }));
  return [...thinking, ...partsOf(message.content), ...toolUses];
}

/** Text and parts as content blocks; empty text is left out (the API refuses empty blocks). */
function partsOf(content: Json): Block[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content))
    return content == null ? [] : [{ type: "text", text: String(content) }];
  return content.flatMap((part): Block[] => {
    if (typeof part === "string") return part === "" ? [] : [{ type: "text", text: part }];
    if (!isObject(part)) return [];
    if (part.type === "text" && part.text === "") return [];
    const image = imageUrl(part);
    if (image === undefined) return [part];
    const { type: _type, url: _url, image_url: _imageUrl, ...rest } = part;
    return [{ ...rest, type: "image", source: imageSource(image) }];
  });
}

function imageUrl(part: Block): string | undefined {
  if (part.type === "image" && typeof part.url === "string") return part.url;
  if (
    part.type === "image_url" &&
    isObject(part.image_url) &&
    typeof part.image_url.url === "string"
  )
    return part.image_url.url;
  return undefined;
}

function imageSource(url: string): Block {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: "base64", media_type: data[1] ?? "", data: data[2] ?? "" };
  return { type: "url", url };
}

function withCacheControl(blocks: Block[], cacheControl: Json | undefined): Block[] {
  if (cacheControl === undefined || blocks.length === 0) return blocks;
  const last = blocks.length - 1;
  return blocks.map((block, i) => (i === last ? { ...block, cache_control: cacheControl } : block));
}

/**
 * Canonical tools as Messages API tools (`input_schema`; `cache_control` passed through).
 *
 * @example anthropicTools([{ name: "add", parameters: { type: "object" } }]) // [{ name: "add", input_schema: { type: "object" } }]
 */
export function anthropicTools(tools: readonly ModelTool[]): Json[] {
  return tools.map((tool) => ({
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    input_schema: tool.parameters,
    ...(tool.cache_control === undefined ? {} : { cache_control: tool.cache_control }),
  }));
}

/**
 * A canonical tool choice as the Messages API's (`required` is its `any`).
 *
 * @example anthropicToolChoice("required") // { type: "any" }
 */
export function anthropicToolChoice(choice: ToolChoice): Json {
  if (typeof choice !== "string") return { type: "tool", name: choice.name };
  return { type: choice === "required" ? "any" : choice };
}
