import { createSecretRedactor, namedSecretsFromEnv, REDACTED } from "../core/secrets.js";

export { REDACTED };

/** Keys whose string values are credentials; `…Env` keys hold the *name* of a variable instead. */
const SECRET_KEY = /(api[-_]?key|secret|passw(or)?d|token|authorization|credential|cookie)$/i;

/**
 * The values of environment variables that look like credentials (`OPENAI_API_KEY`,
 * `STET_TOKEN`, …). Short values are left out: replacing "1" everywhere would garble output.
 *
 * @example secretsFromEnv({ OPENAI_API_KEY: "sk-abc123456", HOME: "/root" }) // ["sk-abc123456"]
 */
export function secretsFromEnv(env: NodeJS.ProcessEnv): string[] {
  return namedSecretsFromEnv(env).map((secret) => secret.value);
}

/**
 * A function that returns a copy of any JSON-like value with every occurrence of the given
 * secrets replaced, at any depth. The server passes everything it sends through one, a second
 * line of defence behind "secrets are never stored".
 *
 * @example createRedactor(["sk-live-1234"])({ error: "bad key sk-live-1234" }) // { error: "bad key [redacted]" }
 */
export function createRedactor(secrets: readonly string[]): <T>(value: T) => T {
  const redactor = createSecretRedactor(secrets.map((value) => ({ name: "secret", value })));
  return <T>(value: T) => (redactor.empty ? value : (redactor.json(value as never).value as T));
}

/**
 * A run configuration for display: string values under credential-like keys (`apiKey`,
 * `authorization`, …) are replaced. The engine records only variable names (`apiKeyEnv`), but a
 * custom solver's `describe()` is user code.
 *
 * @example redactConfig({ solver: { apiKey: "sk-1", apiKeyEnv: "OPENAI_API_KEY" } })
 * // { solver: { apiKey: "[redacted]", apiKeyEnv: "OPENAI_API_KEY" } }
 */
export function redactConfig<T>(value: T): T {
  const walk = (v: unknown, key: string): unknown => {
    if (typeof v === "string") return SECRET_KEY.test(key) ? REDACTED : v;
    if (Array.isArray(v)) return v.map((item) => walk(item, key));
    if (v !== null && typeof v === "object") {
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item, k)]));
    }
    return v;
  };
  return walk(value, "") as T;
}
