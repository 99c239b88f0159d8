import type { Json } from "./json.js";

/** What a model call asks of the model, whichever wire format carries it. */
export interface ModelCallParts {
  /** The model as the call named it (null: none given). */
  model: string | null;
  messages: readonly Json[];
  system?: string | undefined;
  temperature?: number | undefined;
  maxTokens?: number | undefined;
  /** Extra request-body fields; tools passed as `params.tools` are part of them. */
  params?: Record<string, Json> | undefined;
  tools?: Json | undefined;
  toolChoice?: Json | undefined;
  /**
   * The provider whose format carries the call. `openai` (the default) is left out of the
   * identity, so calls journaled before stet had providers keep replaying; any other is in it,
   * so an Anthropic call never replays an OpenAI one.
   */
  provider?: string | undefined;
}

/** Where a model call goes: the provider's name and the endpoint's base URL. */
export interface ModelCallTarget {
  provider: string;
  baseURL: string;
}

/**
 * A model call's identity: model, messages, system, parameters, tools and a provider other than
 * `openai`, and, given its
 * `target`, the provider and the endpoint (the base URL without user info, query or fragment,
 * where credentials can hide). Never the key or headers. Fields the call left out are absent,
 * so an identity's canonical JSON is stable across callers.
 *
 * The step journal matches chat steps by the identity *without* a target: that is the shape
 * every journal written so far was hashed by, and a resume must keep replaying those entries.
 * New uses that must tell endpoints apart (a reply cache) pass the target.
 *
 * @example modelCallIdentity({ model: "gpt-4o-mini", messages }) // { model, messages }
 * @example modelCallIdentity(call, { provider: "openai", baseURL: "https://u:k@h/v1" }).endpoint // "https://h/v1"
 */
export function modelCallIdentity(
  call: ModelCallParts,
  target?: ModelCallTarget,
): Record<string, Json> {
  const identity: Record<string, Json> = { model: call.model, messages: [...call.messages] };
  if (call.system !== undefined) identity.system = call.system;
  if (call.temperature !== undefined) identity.temperature = call.temperature;
  if (call.maxTokens !== undefined) identity.maxTokens = call.maxTokens;
  if (call.params !== undefined) identity.params = call.params;
  if (call.tools !== undefined) identity.tools = call.tools;
  if (call.toolChoice !== undefined) identity.toolChoice = call.toolChoice;
  if (call.provider !== undefined && call.provider !== "openai") identity.provider = call.provider;
  if (target !== undefined) {
    identity.provider = target.provider;
    identity.endpoint = withoutCredentials(target.baseURL);
  }
  return identity;
}

/**
 * A base URL without user info, query or fragment, and without trailing slashes.
 *
 * @example withoutCredentials("https://user:key@host/v1/?key=k") // "https://host/v1"
 */
export function withoutCredentials(baseURL: string): string {
  return baseURL
    .replace(/[?#].*$/s, "")
    .replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1")
    .replace(/\/+$/, "");
}
