import { namedSecretsFromEnv, type Secret } from "../core/secrets.js";
import type { Store } from "../store/types.js";

/**
 * Every secret a run knows of: credential-like environment variables (`OPENAI_API_KEY`,
 * `STET_TOKEN`, …), the store's own password, and `extra` (a server's token). The engine replaces
 * them in every attempt it writes; the solver's and scorers' own `secrets()` are added there.
 *
 * @example executeRun(exec, { ...options, secrets: runSecrets(store, options.secrets) });
 */
export function runSecrets(store: Store, extra: readonly Secret[] = []): Secret[] {
  return [...namedSecretsFromEnv(process.env), ...(store.secrets ?? []), ...extra];
}
