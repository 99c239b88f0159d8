/** What a redacted value is replaced with. */
export const REDACTED = "[redacted]";

const SECRET_ENV_NAME = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH/i;
/** Keys whose string values are credentials; `…Env` keys hold the *name* of a variable instead. */
const SECRET_KEY = /(api[-_]?key|secret|passw(or)?d|token|authorization|credential|cookie)$/i;

/**
 * The values of environment variables that look like credentials (`OPENAI_API_KEY`,
 * `STET_TOKEN`, …). Short values are left out: replacing "1" everywhere would garble output.
 *
 * @example secretsFromEnv({ OPENAI_API_KEY: "sk-abc123456", HOME: "/root" }) // ["sk-abc123456"]
 */
export function secretsFromEnv(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name, value]) => SECRET_ENV_NAME.test(name) && value !== undefined)
    .map(([, value]) => value!)
    .filter((value) => value.length >= 8);
}

/**
 * A function that returns a copy of any JSON-like value with every occurrence of the given
 * secrets replaced, at any depth. The server passes everything it sends through one, a second
 * line of defence behind "secrets are never stored".
 *
 * @example createRedactor(["sk-live-1234"])({ error: "bad key sk-live-1234" }) // { error: "bad key [redacted]" }
 */
export function createRedactor(secrets: readonly string[]): <T>(value: T) => T {
  const known = [...new Set(secrets.filter((s) => s.length > 0))].sort(
    (a, b) => b.length - a.length,
  );
  const text = (s: string) => known.reduce((out, secret) => out.replaceAll(secret, REDACTED), s);
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return text(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    }
    return value;
  };
  return <T>(value: T) => (known.length === 0 ? value : (walk(value) as T));
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
