import {
  createSecretRedactor,
  namedSecretsFromEnv,
  REDACTED,
  redactConfig,
} from "../core/secrets.js";

export { REDACTED };

/**
 * The values of environment variables that look like credentials (`OPENAI_API_KEY`,
 * `STET_TOKEN`, …). Short values are left out: replacing "1" everywhere would garble output.
 *
 * @example secretsFromEnv({ OPENAI_API_KEY: "sk-abc123456", HOME: "/root" }) // ["sk-abc123456"]
 */
export function secretsFromEnv(env: Readonly<Record<string, string | undefined>>): string[] {
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

export { redactConfig };
