import type { CallTarget } from "../core/eval.js";
import type { LanguageModelLike } from "../core/language-model.js";
import type { RateEndpoint } from "../core/rate-limits.js";
import { headersCredential } from "./headers-credential.js";
import { redactUrl } from "./retrying-post.js";

/** What an AI SDK provider package keeps on its models (`@ai-sdk/*`: `model.config`). */
interface ProviderConfig {
  baseURL?: unknown;
  url?: unknown;
  headers?: unknown;
}

/** Each model's endpoint: its provider's config is read once (its headers may load a key). */
const endpoints = new WeakMap<object, Promise<RateEndpoint>>();

/**
 * Where an AI SDK model's calls go, as rate limits see it: its provider (the first part of its
 * `provider` string: `openai.chat` is `openai`, so a limit declared for `openai:gpt-4o-mini`
 * applies), its model id, and, from the provider package's config (every `@ai-sdk/*` package
 * keeps one on its models, with `baseURL` or `url()` and `headers()`), the base URL and the
 * credential the package sends (`headersCredential` of its headers, as stet's own providers read
 * theirs: the same key is the same budget either way). A model without such a config is one
 * budget per provider and model id.
 *
 * @example await languageModelEndpoint(createOpenAI({ apiKey }).chat("gpt-4o-mini")) // { provider: "openai", model: "gpt-4o-mini", baseURL: "https://api.openai.com/v1", credential: "…" }
 */
export function languageModelEndpoint(model: LanguageModelLike): Promise<RateEndpoint> {
  let endpoint = endpoints.get(model);
  if (!endpoint) {
    endpoint = readEndpoint(model);
    endpoints.set(model, endpoint);
  }
  return endpoint;
}

async function readEndpoint(model: LanguageModelLike): Promise<RateEndpoint> {
  const provider = model.provider.split(".")[0] ?? model.provider;
  const config = (model as { config?: unknown }).config;
  const endpoint: RateEndpoint = { provider, model: model.modelId, baseURL: "" };
  if (typeof config !== "object" || config === null) return endpoint;
  const { baseURL, url, headers } = config as ProviderConfig;
  try {
    if (typeof baseURL === "string") endpoint.baseURL = redactUrl(baseURL);
    else if (typeof url === "function") {
      const full: unknown = url({ modelId: model.modelId, path: "" });
      if (typeof full === "string") endpoint.baseURL = redactUrl(full);
    }
  } catch {
    // No base URL to tell endpoints apart by: the provider and model id still do.
  }
  // Anthropic's package takes the base URL with its `/v1` (it posts to `/messages`), stet's own
  // provider without it (`/v1/messages`): the same endpoint, one budget.
  if (provider === "anthropic") endpoint.baseURL = endpoint.baseURL.replace(/\/v1\/*$/, "");
  try {
    const sent: unknown = await (typeof headers === "function" ? headers() : headers);
    if (typeof sent === "object" && sent !== null) {
      const credential = headersCredential(sent as Record<string, unknown>);
      if (credential !== undefined) endpoint.credential = credential;
    }
  } catch {
    // No key the package could load (it fails the call itself): no credential to key by.
  }
  return endpoint;
}

/**
 * Where an AI SDK model's calls go and with what credential, for the reply cache: its provider
 * string (`openai.chat`, so another API of one package is another call), and the base URL and
 * credential its provider package's config gives (`languageModelEndpoint`). Undefined, no call
 * cached, for a model whose config says neither: stet could not tell its endpoint or key apart
 * from another's.
 *
 * @example await languageModelTarget(createOpenAI({ apiKey }).chat("gpt-4o-mini")) // { provider: "openai.chat", baseURL: "https://api.openai.com/v1", credential: "…" }
 */
export async function languageModelTarget(
  model: LanguageModelLike,
): Promise<CallTarget | undefined> {
  const { baseURL, credential } = await languageModelEndpoint(model);
  if (baseURL === "" || credential === undefined) return undefined;
  return { provider: model.provider, baseURL, credential };
}
