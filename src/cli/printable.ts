// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` with every control character but newline and tab shown as a `\u001b`-style escape. A
 * refusal quotes what it refuses (an argument, a parser's view of a file's bytes): escaped, an
 * input cannot clear the screen, move the cursor or retitle the terminal it is reported on.
 *
 * @example printable('no run with id "r_\u001b[2J"') // 'no run with id "r_\\u001b[2J"'
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
