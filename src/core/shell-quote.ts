/**
 * A word as a POSIX shell reads it: as it is when it holds only characters a shell leaves alone,
 * else in single quotes (a single quote inside as `'\''`). For the commands stet prints.
 *
 * @example shellQuote("my evals/s.db") // "'my evals/s.db'"
 */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_./,:@%+=-]+$/.test(word) && !word.startsWith("=")) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
