import type { Json } from "../core/json.js";
import {
  createSecretRedactor,
  type Redaction,
  type Redactor,
  type Secret,
} from "../core/secrets.js";
import type { Score } from "../core/types.js";

/**
 * The redaction of one attempt (or scoring): the run's known secrets, and those its model calls
 * made known since it began (`learn`: a `ctx.chat` call's explicit key and header values). What
 * it writes from then on (journal entries, output, transcript, scores, error) has them replaced;
 * `found` collects the names replaced in the attempt's own fields.
 */
export interface AttemptRedaction {
  readonly found: Set<string>;
  /** Adds secrets from now on; the run's redactor is not changed (see Redactor.with). */
  learn(secrets: readonly Secret[]): void;
  json(value: Json): Json;
  text(value: string): string;
  scores(scores: Score[]): Score[];
  /** For a journal entry: its names go to the entry's `redacted`, not to `found`. */
  entry(value: Json): Redaction<Json>;
}

/**
 * A redaction starting from the run's `redactor`. Without secrets every step returns its input
 * untouched; nothing is built for an attempt that learns nothing.
 *
 * @example
 * const redaction = attemptRedaction(run.redactor);
 * redaction.learn([{ name: "ctx.chat apiKey", value: "sk-test-1234" }]);
 * redaction.text("echo sk-test-1234") // "echo [redacted]"; redaction.found has "ctx.chat apiKey"
 */
export function attemptRedaction(redactor: Redactor | undefined): AttemptRedaction {
  const found = new Set<string>();
  let current = redactor;
  const note = <T>(redaction: Redaction<T>): T => {
    for (const name of redaction.found) found.add(name);
    return redaction.value;
  };
  const active = (r: Redactor | undefined): r is Redactor => r !== undefined && !r.empty;
  return {
    found,
    learn: (secrets) => {
      if (secrets.length === 0) return;
      current = (current ?? createSecretRedactor([])).with(secrets);
    },
    json: (value) => (active(current) ? note(current.json(value)) : value),
    text: (value) => (active(current) ? note(current.text(value)) : value),
    scores: (scores) =>
      active(current)
        ? (note(current.json(scores as unknown as Json)) as unknown as Score[])
        : scores,
    entry: (value) => (active(current) ? current.json(value) : { value, found: [] }),
  };
}
