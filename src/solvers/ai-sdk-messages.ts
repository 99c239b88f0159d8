import type { Json } from "../core/json.js";
import { languageModelFinish, languageModelTokens } from "../core/language-model.js";
import type { LanguageModelCallOptions, LanguageModelLike } from "../core/language-model.js";
import type { ModelMessage, ModelTool, ToolChoice } from "../core/model-types.js";
import type { CanonicalCall, CanonicalReply } from "./provider.js";
import { isObject, parseArguments, replyMessage, toolCallIdOf, toolCallsOf } from "./tool-calls.js";

type Version = LanguageModelLike["specificationVersion"];
type Part = Record<string, unknown>;

/**
 * A canonical call as an AI SDK model's call options: the messages as its prompt (system text,
 * text and image parts, an assistant's tool calls as `tool-call` parts, a tool message as a
 * `tool-result` part named after the call it answers), tools as function tools, the tool
 * choice, temperature, `maxOutputTokens`, the signal; `params` are extra call options (topP,
 * seed, providerOptions, …).
 *
 * @example languageModelOptions("v4", { model: "m", messages: [{ role: "user", content: "Hi" }] })
 * // { prompt: [{ role: "user", content: [{ type: "text", text: "Hi" }] }] }
 */
export function languageModelOptions(
  version: Version,
  call: Omit<CanonicalCall, "model">,
  signal?: AbortSignal,
): LanguageModelCallOptions {
  const options: LanguageModelCallOptions = {
    ...(call.params ?? {}),
    prompt: languageModelPrompt(version, call.messages),
  };
  if (call.tools !== undefined) options.tools = call.tools.map(functionTool);
  if (call.toolChoice !== undefined) options.toolChoice = toolChoiceOf(call.toolChoice);
  if (call.temperature !== undefined) options.temperature = call.temperature;
  if (call.maxTokens !== undefined) options.maxOutputTokens = call.maxTokens;
  if (signal !== undefined) options.abortSignal = signal;
  return options;
}

function languageModelPrompt(version: Version, messages: readonly ModelMessage[]): Part[] {
  const toolNames = new Map<string, string>();
  return messages.map((message): Part => {
    if (message.role === "system" || message.role === "developer") {
      return { role: "system", content: textOf(message.content) };
    }
    if (message.role === "tool") {
      const id = toolCallIdOf(message);
      const output = { type: "text", value: textOf(message.content) };
      const toolName = toolNames.get(id) ?? String(message.name ?? "");
      return {
        role: "tool",
        content: [{ type: "tool-result", toolCallId: id, toolName, output }],
      };
    }
    const parts = partsOf(version, message.content);
    if (message.role !== "assistant") return { role: "user", content: parts };
    for (const call of toolCallsOf(message)) {
      toolNames.set(call.id, call.name);
      parts.push({
        type: "tool-call",
        toolCallId: call.id,
        toolName: call.name,
        input: call.arguments,
      });
    }
    return { role: "assistant", content: parts };
  });
}

function partsOf(version: Version, content: Json): Part[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content))
    return content == null ? [] : [{ type: "text", text: String(content) }];
  return content.flatMap((part): Part[] => {
    if (typeof part === "string") return [{ type: "text", text: part }];
    if (!isObject(part)) return [];
    if (part.type === "text" && typeof part.text === "string")
      return [{ type: "text", text: part.text }];
    const url = imageUrl(part);
    return url === undefined ? [] : [filePart(version, url)];
  });
}

function imageUrl(part: Record<string, Json>): string | undefined {
  if (part.type === "image" && typeof part.url === "string") return part.url;
  if (
    part.type === "image_url" &&
    isObject(part.image_url) &&
    typeof part.image_url.url === "string"
  )
    return part.image_url.url;
  return undefined;
}

/** An image as a file part: a `data:` URL's bytes inline (base64), any other URL as a URL. */
function filePart(version: Version, url: string): Part {
  const inline = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  const mediaType = inline?.[1] ?? "image/*";
  if (version === "v4") {
    const data = inline
      ? { type: "data", data: inline[2] ?? "" }
      : { type: "url", url: new URL(url) };
    return { type: "file", mediaType, data };
  }
  return { type: "file", mediaType, data: inline ? (inline[2] ?? "") : new URL(url) };
}

function textOf(content: Json): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content == null ? "" : JSON.stringify(content);
  return content
    .map((part) =>
      typeof part === "string"
        ? part
        : isObject(part) && typeof part.text === "string"
          ? part.text
          : "",
    )
    .join("");
}

function functionTool(tool: ModelTool): Part {
  return {
    type: "function",
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: tool.parameters,
  };
}

function toolChoiceOf(choice: ToolChoice): Part {
  return typeof choice === "string" ? { type: choice } : { type: "tool", toolName: choice.name };
}

/**
 * A `doGenerate` result (V2, V3 or V4) as a canonical reply: the text parts joined, the
 * reasoning parts joined, tool calls with their input parsed, the finish reason, the assistant
 * message and the usage's token figures (cached, cache-write and reasoning tokens included).
 *
 * @example languageModelReply({ content: [{ type: "text", text: "4" }], finishReason: "stop", usage }).content // "4"
 */
export function languageModelReply(result: unknown): CanonicalReply {
  const { content, finishReason, usage } = (result ?? {}) as Record<string, unknown>;
  const parts = Array.isArray(content) ? content.filter(isPart) : [];
  const text = parts
    .filter((p) => p.type === "text")
    .map((p) => String(p.text ?? ""))
    .join("");
  const reasoning = parts.filter((p) => p.type === "reasoning").map((p) => String(p.text ?? ""));
  const toolCalls = parts
    .filter((p) => p.type === "tool-call" && p.providerExecuted !== true)
    .map((p) => ({
      id: String(p.toolCallId ?? ""),
      name: String(p.toolName ?? ""),
      arguments: parseArguments(typeof p.input === "string" ? p.input : (p.input as Json)),
    }));
  const reply: CanonicalReply = {
    content: text,
    toolCalls,
    finishReason: languageModelFinish(finishReason),
    message: replyMessage(text, toolCalls),
  };
  if (reasoning.length > 0) reply.reasoning = reasoning.join("");
  const tokens = languageModelTokens(usage);
  if (tokens !== undefined) reply.usage = tokens;
  return reply;
}

function isPart(value: unknown): value is Part & { type: string } {
  return typeof value === "object" && value !== null && typeof (value as Part).type === "string";
}
