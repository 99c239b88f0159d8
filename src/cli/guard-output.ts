import { createSecretRedactor, namedSecretsFromEnv, type Secret } from "../core/secrets.js";
import { urlSecrets } from "../store/postgres/driver.js";
import { isPostgresUrl } from "./store-location.js";

/**
 * Makes every write to `streams` go through a redaction of the secrets this invocation knows:
 * credential-like environment variables and the password of any PostgreSQL URL it was given
 * (`--store`, `STET_STORE`). A message is then safe whatever code path printed it, an echoed
 * key in a provider's error included.
 *
 * @example guardOutput([process.stdout, process.stderr], process.argv.slice(2), process.env);
 */
export function guardOutput(
  streams: readonly NodeJS.WriteStream[],
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): void {
  const secrets: Secret[] = [
    ...namedSecretsFromEnv(env),
    ...[...argv, env.STET_STORE ?? ""]
      .map((arg) => arg.replace(/^--store=/, ""))
      .filter(isPostgresUrl)
      .flatMap(urlSecrets),
  ];
  const redactor = createSecretRedactor(secrets);
  if (redactor.empty) return;
  for (const stream of streams) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text =
        typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : null;
      return write(text === null ? chunk : redactor.text(text).value, ...rest);
    }) as typeof stream.write;
  }
}
