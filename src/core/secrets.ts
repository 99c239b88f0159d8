import type { Json } from "./json.js";

/** What a redacted value is replaced with. */
export const REDACTED = "[redacted]";

/** A value never to write anywhere, and what it is called when a write is said to have held it. */
export interface Secret {
  /** E.g. "OPENAI_API_KEY", "STET_TOKEN", "--store password", "header authorization". */
  name: string;
  value: string;
}

const SECRET_ENV_NAME = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH/i;
/** Env values shorter than this are left out: replacing "1" everywhere would garble output. */
const MIN_ENV_SECRET = 8;
/** A secret the user declared (a solver's apiKey, a header, a password) may be shorter. */
const MIN_DECLARED_SECRET = 6;

/**
 * The environment variables that look like credentials (`OPENAI_API_KEY`, `STET_TOKEN`, …),
 * named after the variable.
 *
 * @example namedSecretsFromEnv({ OPENAI_API_KEY: "sk-abc123456", HOME: "/root" })
 * // [{ name: "OPENAI_API_KEY", value: "sk-abc123456" }]
 */
export function namedSecretsFromEnv(env: Record<string, string | undefined>): Secret[] {
  return Object.entries(env)
    .filter((entry): entry is [string, string] => SECRET_ENV_NAME.test(entry[0]) && !!entry[1])
    .filter(([, value]) => value.length >= MIN_ENV_SECRET)
    .map(([name, value]) => ({ name, value }));
}

/**
 * A declared secret, or nothing when the value is absent or too short to replace safely.
 *
 * @example declaredSecret("apiKey", options.apiKey) // [{ name: "apiKey", value: "sk-…" }] or []
 */
export function declaredSecret(name: string, value: string | undefined): Secret[] {
  return value !== undefined && value.length >= MIN_DECLARED_SECRET ? [{ name, value }] : [];
}

/** What `redact` returns: the clean value and the names of the secrets it held. */
export interface Redaction<T> {
  value: T;
  /** Sorted, unique; empty when nothing was replaced. */
  found: string[];
}

/** Redacts secrets from text and JSON values, reporting which ones it found. */
export interface Redactor {
  /** True when there is nothing to redact (every call returns its input). */
  readonly empty: boolean;
  text(value: string): Redaction<string>;
  json<T extends Json | undefined>(value: T): Redaction<T>;
  /**
   * A redactor for these secrets and `secrets`; this one itself (nothing built) when every value
   * is one it already knows. A known value keeps its first name.
   *
   * @example redactor.with([{ name: "ctx.chat apiKey", value: "sk-test-1234" }])
   */
  with(secrets: readonly Secret[]): Redactor;
}

/**
 * A redactor for `secrets`. Each secret is also looked for in the forms an echoing server
 * writes it in: URL-encoded and base64 (as in a Basic auth header). Longer secrets are replaced
 * first, so a secret that contains another is replaced whole.
 *
 * @example
 * const redactor = createSecretRedactor([{ name: "OPENAI_API_KEY", value: "sk-live-1234" }]);
 * redactor.text("you sent Bearer sk-live-1234") // { value: "you sent Bearer [redacted]", found: ["OPENAI_API_KEY"] }
 */
export function createSecretRedactor(secrets: readonly Secret[]): Redactor {
  const forms = secretForms(secrets);
  const known = new Set(secrets.map((secret) => secret.value));
  const text = (value: string, found: Set<string>): string => {
    let out = value;
    for (const { form, name } of forms) {
      if (!out.includes(form)) continue;
      out = out.replaceAll(form, REDACTED);
      found.add(name);
    }
    return out;
  };
  /** Whether any string or key in `value` holds a form: asked before anything is copied. */
  const holds = (value: unknown): boolean => {
    if (typeof value === "string") return forms.some(({ form }) => value.includes(form));
    if (Array.isArray(value)) return value.some(holds);
    if (value !== null && typeof value === "object") {
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        if (holds(key) || holds((value as Record<string, unknown>)[key])) return true;
      }
    }
    return false;
  };
  const walk = (value: unknown, found: Set<string>): unknown => {
    if (typeof value === "string") return text(value, found);
    if (Array.isArray(value)) return value.map((item) => walk(item, found));
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [text(k, found), walk(v, found)]),
      );
    }
    return value;
  };
  const run = <T>(value: T, redact: (v: T, found: Set<string>) => T): Redaction<T> => {
    if (forms.length === 0) return { value, found: [] };
    const found = new Set<string>();
    const clean = redact(value, found);
    return found.size === 0 ? { value, found: [] } : { value: clean, found: [...found].sort() };
  };
  const redactor: Redactor = {
    empty: forms.length === 0,
    text: (value) => run(value, text),
    // Most values hold no secret: they are scanned, and only one that holds a secret is copied
    // (a walk builds a new object for every object and array it passes).
    json: (value) => run(value, (v, found) => (holds(v) ? (walk(v, found) as typeof v) : v)),
    with: (more) => {
      const added = more.filter((secret) => secret.value !== "" && !known.has(secret.value));
      return added.length === 0 ? redactor : createSecretRedactor([...secrets, ...added]);
    },
  };
  return redactor;
}

function secretForms(secrets: readonly Secret[]): { form: string; name: string }[] {
  const forms = new Map<string, string>();
  for (const { name, value } of secrets) {
    if (value.length === 0) continue;
    for (const form of [value, encodeURIComponent(value), base64(value)]) {
      if (!forms.has(form)) forms.set(form, name);
    }
  }
  return [...forms]
    .map(([form, name]) => ({ form, name }))
    .sort((a, b) => b.form.length - a.form.length);
}

function base64(value: string): string {
  const bytes = new TextEncoder().encode(value);
  return btoa(String.fromCharCode(...bytes));
}

/** Keys whose string values are credentials; `…Env` keys hold the *name* of a variable instead. */
const SECRET_KEY = /(api[-_]?key|secret|passw(or)?d|token|authorization|credential|cookie)$/i;

/**
 * A run configuration with the string values under credential-like keys (`apiKey`,
 * `authorization`, …) replaced. The engine records only variable names (`apiKeyEnv`), but a
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
