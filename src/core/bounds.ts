import * as z from "zod";
import { StetError, type StetErrorCode } from "./errors.js";

/** The accepted range of one numeric input, and why it is there. */
export interface Bound {
  /** The smallest accepted value; with `above`, the value it must be more than. */
  readonly min: number;
  /** `min` itself is refused (a spend cap of $0 caps everything). */
  readonly above?: boolean;
  readonly max: number;
  readonly integer: boolean;
  /** What the number counts, named in messages ("ms", "US dollars"); none for a plain count. */
  readonly unit?: string;
  /** One line: why the bound is where it is. */
  readonly why: string;
}

const DAY_MS = 86_400_000;

/**
 * Every numeric input of stet, checked here for the CLI's flags and environment variables, the
 * HTTP API's request bodies and `defineEval`, so the three accept the same values. The bounds are
 * far beyond what a serious run needs; they exist so a typo (`--concurrency 1000000000`) is
 * refused before anything is created instead of exhausting the process. The "Bounds" table of docs/cli.md
 * lists them (a test keeps the two in step).
 */
export const BOUNDS = {
  concurrency: {
    min: 1,
    max: 1_000,
    integer: true,
    why: "samples in flight at once; beyond 1000 the provider's rate limit, not stet, sets the pace",
  },
  epochs: {
    min: 1,
    max: 10_000,
    integer: true,
    why: "repetitions of every sample; pass@k and variance estimates need tens, not millions",
  },
  limit: {
    min: 1,
    max: 100_000_000,
    integer: true,
    why: "the first n samples; more than any dataset a run holds in memory",
  },
  timeoutMs: {
    min: 1,
    max: DAY_MS,
    integer: true,
    unit: "ms",
    why: "per-sample timeout; a sample still running after a day is stuck",
  },
  retries: {
    min: 0,
    max: 100,
    integer: true,
    why: "retries of a failed sample within one invocation, each one possibly paid for",
  },
  maxCost: {
    min: 0,
    above: true,
    max: 1_000_000_000,
    integer: false,
    unit: "US dollars",
    why: "a spend cap; one of a billion dollars caps nothing",
  },
  rpm: {
    min: 0,
    above: true,
    max: 1_000_000_000,
    integer: false,
    unit: "requests per minute",
    why: "a provider's request rate limit; a billion a minute limits nothing",
  },
  tpm: {
    min: 0,
    above: true,
    max: 1_000_000_000_000,
    integer: false,
    unit: "tokens per minute",
    why: "a provider's token rate limit; a trillion a minute limits nothing",
  },
  rateWindowMs: {
    min: 100,
    max: 86_400_000,
    integer: true,
    unit: "ms",
    why: "the window a provider measures its limits over; a minute for most, a day at most",
  },
  ttlDays: {
    min: 0,
    above: true,
    max: 36_500,
    integer: false,
    unit: "days",
    why: "how long a cached reply is served; a century is forever",
  },
  failUnder: {
    min: 0,
    max: 1,
    integer: false,
    why: "a scorer's mean, which lies in [0, 1]",
  },
  passThreshold: {
    min: 0,
    max: 1,
    integer: false,
    why: "a score, which lies in [0, 1]",
  },
  loadTimeoutMs: {
    min: 100,
    max: 3_600_000,
    integer: true,
    unit: "ms",
    why: "how long an eval module may take to load; an hour is a module that never finishes",
  },
  cancelWaitMs: {
    min: 0,
    max: DAY_MS,
    integer: true,
    unit: "ms",
    why: "how long `stet cancel` waits for the run to stop; 0 does not wait",
  },
  port: {
    min: 0,
    max: 65_535,
    integer: true,
    why: "a TCP port; 0 picks a free one",
  },
  maxBodyBytes: {
    min: 1,
    max: 1_073_741_824,
    integer: true,
    unit: "bytes",
    why: "a request body is held in memory; 1 GiB is far beyond any run request",
  },
  maxStreams: {
    min: 1,
    max: 10_000,
    integer: true,
    why: "event streams open at once, each a connection the server keeps",
  },
  staleMs: {
    min: 1_000,
    max: DAY_MS,
    integer: true,
    unit: "ms",
    why: "STET_STALE_MS: a dead owner on another host goes unnoticed this long; below 1 s a busy owner looks dead",
  },
  leaseMs: {
    min: 100,
    max: DAY_MS,
    integer: true,
    unit: "ms",
    why: "STET_LEASE_MS: a dead worker's keys wait this long before another takes them",
  },
  exportThreads: {
    min: 1,
    max: 64,
    integer: true,
    why: "reader threads of one export, each with its own store connection; past the cores, none helps",
  },
  pageLimit: {
    min: 1,
    max: 500,
    integer: true,
    why: "rows of one API page (`limit` query parameter)",
  },
  pageOffset: {
    min: 0,
    max: 1_000_000_000,
    integer: true,
    why: "rows skipped before an API page (`offset` query parameter)",
  },
} as const satisfies Record<string, Bound>;

export type BoundName = keyof typeof BOUNDS;

/**
 * The range of a bound in words, as messages and docs/cli.md say it.
 *
 * @example describeBound("concurrency") // "an integer from 1 to 1000"
 * @example describeBound("maxCost") // "a number of US dollars above 0, at most 1000000000"
 */
export function describeBound(name: BoundName): string {
  const bound: Bound = BOUNDS[name];
  const what = bound.integer ? "an integer" : "a number";
  const unit = bound.unit === undefined ? "" : ` ${bound.unit}`;
  if (bound.above) return `${what}${unit && ` of${unit}`} above ${bound.min}, at most ${bound.max}`;
  return `${what} from ${bound.min} to ${bound.max}${unit}`;
}

/**
 * What is wrong with `value` for the input `name`, or undefined when it is in bounds: the
 * accepted range, the value and why the bound is there.
 *
 * @example boundProblem("concurrency", 1e9)
 * // "expected an integer from 1 to 1000, got 1000000000 (samples in flight at once; …)"
 */
export function boundProblem(name: BoundName, value: number): string | undefined {
  const bound: Bound = BOUNDS[name];
  const fits =
    Number.isFinite(value) &&
    (!bound.integer || Number.isInteger(value)) &&
    (bound.above ? value > bound.min : value >= bound.min) &&
    value <= bound.max;
  return fits ? undefined : `expected ${describeBound(name)}, got ${value} (${bound.why})`;
}

const DIGITS = /^[0-9]+$/;
/** `0`, `1`, `0.75`, `.5`, `1.` (no sign, exponent, hex, underscores or whitespace). */
const DECIMAL = /^(?:[0-9]+\.?[0-9]*|\.[0-9]+)$/;

/**
 * The number a flag or an environment variable of bound `name` says, or undefined when the text
 * is not one within the bound. Plain decimal digits only (a decimal point where the bound is not
 * an integer's): `Number()` alone would read `""` and `" "` as 0, `0x1` as 1 and `1e3` as 1000,
 * so a typo would silently become a value.
 *
 * @example parseBounded("concurrency", "16") // 16
 * @example parseBounded("concurrency", "1e3") // undefined
 */
export function parseBounded(name: BoundName, text: string): number | undefined {
  const n = (BOUNDS[name].integer ? DIGITS : DECIMAL).test(text) ? Number(text) : Number.NaN;
  return boundProblem(name, n) === undefined ? n : undefined;
}

/**
 * `value` when it is within `name`'s bound; otherwise throws `code` (default `E_USAGE`) naming
 * `label` (the flag, variable or field), the value and the bound.
 *
 * @example checkBound("epochs", 3, "--epochs") // 3
 */
export function checkBound(
  name: BoundName,
  value: number,
  label: string,
  code: StetErrorCode = "E_USAGE",
): number {
  const problem = boundProblem(name, value);
  if (problem !== undefined) throw new StetError(code, `${label}: ${problem}`);
  return value;
}

/**
 * A zod number within `name`'s bound, whose issue says the range, the value and why (a request
 * body's and `defineEval`'s fields).
 *
 * @example z.object({ concurrency: boundedNumber("concurrency").optional() })
 */
export function boundedNumber(name: BoundName): z.ZodNumber {
  return z.number().superRefine((value, ctx) => {
    const problem = boundProblem(name, value);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });
}
