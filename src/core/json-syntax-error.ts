import { MAX_DOCUMENT_DEPTH } from "./json.js";

/** The first thing wrong with a JSON text: where, what, and whether it is its depth. */
export interface JsonTextProblem {
  /** UTF-16 offset of the offending character (or of the first bracket too deep). */
  offset: number;
  message: string;
  /** The text opens an array or object at level `maxDepth + 1` before any syntax error. */
  tooDeep: boolean;
}

/**
 * Scans a JSON text (RFC 8259) and returns the offset of its first syntax error with a short
 * description, or `undefined` when the text is valid JSON. Only used after `JSON.parse` has
 * failed, to say where; it builds no values. It recurses per level, so it stops at the first
 * array or object deeper than `maxDepth` (the outermost is level 1) and says so (`tooDeep`):
 * a text cannot overflow the stack, and one both too deep and malformed is told by whichever
 * comes first.
 *
 * Why not jsonc-parser's error positions: a fault inside a string (a bad escape, a control
 * character, no closing quote) is reported at the string's opening quote, and only the last one;
 * an unknown token (`'a'`, `nope`) says nothing of what was expected there; and its parser
 * recurses without a bound, on through the rest of a text after its first error.
 *
 * @example findJsonSyntaxError('[1, 2') // { offset: 5, message: "unexpected end of input, expected ',' or ']'", tooDeep: false }
 */
export function findJsonSyntaxError(
  text: string,
  maxDepth = MAX_DOCUMENT_DEPTH,
): JsonTextProblem | undefined {
  const scanner = new Scanner(text, maxDepth);
  try {
    scanner.value();
    scanner.skipWhitespace();
    if (scanner.pos < text.length) scanner.fail("unexpected content after the JSON value");
    return undefined;
  } catch (error) {
    if (error instanceof JsonSyntaxError) {
      return { offset: error.offset, message: error.message, tooDeep: error.tooDeep };
    }
    throw error;
  }
}

class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
    readonly tooDeep = false,
  ) {
    super(message);
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

class Scanner {
  pos = 0;
  private depth = 0;
  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {}

  fail(expected: string): never {
    const ch = this.text[this.pos];
    const found = ch === undefined ? "unexpected end of input" : `found ${JSON.stringify(ch)}`;
    throw new JsonSyntaxError(
      ch === undefined ? `${found}, ${expected}` : `${expected}, ${found}`,
      this.pos,
    );
  }

  skipWhitespace(): void {
    while (" \t\n\r".includes(this.text[this.pos] ?? "x")) this.pos++;
  }

  value(): void {
    this.skipWhitespace();
    const ch = this.text[this.pos];
    if (ch === "{") return this.container("}", () => this.member());
    if (ch === "[") return this.container("]", () => this.value());
    if (ch === '"') return this.string();
    for (const literal of ["true", "false", "null"]) {
      if (this.text.startsWith(literal, this.pos)) {
        this.pos += literal.length;
        return;
      }
    }
    NUMBER.lastIndex = this.pos;
    if (NUMBER.test(this.text)) this.pos = NUMBER.lastIndex;
    else this.fail("expected a JSON value");
  }

  private container(close: "}" | "]", item: () => void): void {
    this.depth++;
    if (this.depth > this.maxDepth) {
      const message = `nesting too deep: more than ${this.maxDepth} levels of arrays and objects`;
      throw new JsonSyntaxError(message, this.pos, true);
    }
    this.pos++;
    this.skipWhitespace();
    if (this.text[this.pos] === close) {
      this.pos++;
      this.depth--;
      return;
    }
    for (;;) {
      item();
      this.skipWhitespace();
      const ch = this.text[this.pos];
      if (ch === close) break;
      if (ch !== ",") this.fail(`expected ',' or '${close}'`);
      this.pos++;
      this.skipWhitespace();
      if (this.text[this.pos] === close) this.fail("expected a value after ',' (trailing comma)");
    }
    this.pos++;
    this.depth--;
  }

  private member(): void {
    this.skipWhitespace();
    if (this.text[this.pos] !== '"') this.fail("expected a property name (a double-quoted string)");
    this.string();
    this.skipWhitespace();
    if (this.text[this.pos] !== ":") this.fail("expected ':' after the property name");
    this.pos++;
    this.value();
  }

  private string(): void {
    this.pos++;
    for (;;) {
      const ch = this.text[this.pos];
      if (ch === undefined) this.fail("unterminated string");
      if (ch === '"') break;
      if (ch < " ") this.fail("control characters must be escaped in strings");
      if (ch === "\\") {
        ESCAPE.lastIndex = this.pos;
        if (!ESCAPE.test(this.text)) this.fail("invalid escape sequence");
        this.pos = ESCAPE.lastIndex;
      } else {
        this.pos++;
      }
    }
    this.pos++;
  }
}
