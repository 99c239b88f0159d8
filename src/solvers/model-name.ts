import { modelProvider, type ProviderName } from "../core/model-types.js";
import { anthropic } from "./anthropic-provider.js";
import { openai } from "./openai-provider.js";
import type { Provider } from "./provider.js";

/** Provider prefixes dropped from `provider:model` strings; others are part of the model id. */
const providerPrefixes = new Set([
  "openai",
  "openrouter",
  "azure",
  "vllm",
  "ollama",
  "llamacpp",
  "lmstudio",
  "together",
  "groq",
  "fireworks",
  "deepseek",
  "mistral",
  "anthropic",
  "local",
]);

/**
 * The model id to send to the endpoint: a known `provider:` prefix is dropped, anything else
 * is kept, so Ollama tags like `llama3:8b` survive.
 *
 * @example bareModel("openai:gpt-4o-mini") // "gpt-4o-mini"
 * @example bareModel("ollama:llama3:8b") // "llama3:8b"
 */
export function bareModel(model: string): string {
  const colon = model.indexOf(":");
  if (colon <= 0) return model;
  return providerPrefixes.has(model.slice(0, colon).toLowerCase()) ? model.slice(colon + 1) : model;
}

/**
 * The provider of a model id (see modelProvider): `anthropic:` names Anthropic's Messages API,
 * anything else the OpenAI-compatible format; an explicit `provider` wins.
 *
 * @example providerOf("anthropic:claude-sonnet-4-5").name // "anthropic"
 */
export function providerOf(model: string, explicit?: ProviderName): Provider {
  return modelProvider(model, explicit) === "anthropic" ? anthropic : openai;
}
