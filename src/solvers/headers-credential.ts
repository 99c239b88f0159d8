/**
 * Headers that say how to speak to an API, not who is asking: left out of a credential (stet's
 * own providers send them without being asked, a provider package with its version in them).
 */
const PROTOCOL_HEADERS = new Set([
  "accept",
  "anthropic-beta",
  "anthropic-version",
  "content-type",
  "user-agent",
]);

/** The headers an API key travels in, in the order one is looked for. */
const KEY_HEADERS = ["x-api-key", "api-key", "authorization"];

/**
 * The credential a request's headers carry, as text the rate limits only ever hash into a
 * budget's name (see `keyedEndpointName`): the API key (`x-api-key`, `api-key`, or an
 * `Authorization: Bearer` token) and every other header that is not protocol (content type,
 * user agent, API version), by lowercase name. Made from the headers a request is sent with, so
 * one key is one text however it is given: stet's own provider and an AI SDK provider package
 * sending the same key and headers share one budget. Undefined when the headers carry none.
 *
 * @example headersCredential({ authorization: "Bearer sk-1", "content-type": "application/json" }) // '["sk-1",[]]'
 */
export function headersCredential(headers: Readonly<Record<string, unknown>>): string | undefined {
  const rest = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (typeof value === "string" && !PROTOCOL_HEADERS.has(lower)) rest.set(lower, value);
  }
  let key: string | null = null;
  for (const name of KEY_HEADERS) {
    const value = rest.get(name);
    if (value === undefined) continue;
    const bearer = name === "authorization" ? /^Bearer\s+(.+)$/i.exec(value) : null;
    if (name === "authorization" && !bearer) continue;
    key = bearer ? bearer[1]! : value;
    rest.delete(name);
    break;
  }
  if (key === null && rest.size === 0) return undefined;
  const others = [...rest].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([key, others]);
}
