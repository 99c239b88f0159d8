import { InvalidArgumentError } from "commander";

/**
 * Parsers for numeric flag values. Each accepts plain decimal digits only: `Number()` alone
 * would read `""` and `" "` as 0, `0x1` as 1 and `1e3` as 1000, so a typo would silently become
 * a value. Commander names the flag and the value in the usage error (exit 2).
 */

const DIGITS = /^[0-9]+$/;
/** `0`, `1`, `0.75`, `.5`, `1.` (no sign, exponent, hex, underscores or whitespace). */
const DECIMAL = /^(?:[0-9]+\.?[0-9]*|\.[0-9]+)$/;

function wholeNumber(value: string): number | undefined {
  if (!DIGITS.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `--epochs`, `--concurrency`, `--limit`, `--timeout`: 1, 2, … */
export function positiveInt(value: string): number {
  const n = wholeNumber(value);
  if (n === undefined || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

/** `--port`: 0 to 65535 (0 picks a free one). */
export function port(value: string): number {
  const n = wholeNumber(value);
  if (n === undefined || n > 65_535) {
    throw new InvalidArgumentError("expected a port number (0 picks a free one)");
  }
  return n;
}

/** `--wait`: 0, 1, … milliseconds. */
export function milliseconds(value: string): number {
  const n = wholeNumber(value);
  if (n === undefined) throw new InvalidArgumentError("expected milliseconds ≥ 0");
  return n;
}

/** `--max-cost`: US dollars, a decimal number greater than 0. */
export function dollars(value: string): number {
  const n = DECIMAL.test(value) ? Number(value) : Number.NaN;
  if (!(n > 0 && Number.isFinite(n))) {
    throw new InvalidArgumentError("expected an amount in US dollars greater than 0, such as 0.5");
  }
  return n;
}

/** `--fail-under`: a decimal number from 0 to 1. */
export function fraction(value: string): number {
  const n = DECIMAL.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 0 && n <= 1)) {
    throw new InvalidArgumentError("expected a decimal number in [0, 1], such as 0.8");
  }
  return n;
}

/**
 * `--rerun q3,q7` (repeatable: `--rerun q3 --rerun q7`): sample ids, accumulated in order. An
 * empty id (`q3,,q7`, a trailing comma) is a usage error.
 */
export function sampleIds(value: string, previous: string[] = []): string[] {
  const ids = value.split(",").map((id) => id.trim());
  if (ids.some((id) => id === "")) {
    throw new InvalidArgumentError("expected comma-separated sample ids, such as q3,q7");
  }
  return [...previous, ...ids];
}
