import { InvalidArgumentError } from "commander";
import { BOUNDS, describeBound, parseBounded, type BoundName } from "../core/bounds.js";

/**
 * The parser of a flag whose value has the bound `name` (`core/bounds.ts`, the table the API and
 * `defineEval` check too): plain decimal digits within the bound (`parseBounded`). Commander
 * names the flag and the value in the usage error (exit 2).
 *
 * @example new Option("--concurrency <n>").argParser(bounded("concurrency"))
 */
export function bounded(name: BoundName): (value: string) => number {
  return (value) => {
    const n = parseBounded(name, value);
    if (n === undefined) {
      throw new InvalidArgumentError(`expected ${describeBound(name)} (${BOUNDS[name].why})`);
    }
    return n;
  };
}

/**
 * `--older-than 30d` (or `12h`): an age in days, within the bound of `ttlDays`.
 *
 * @example olderThan("12h") // 0.5
 */
export function olderThan(value: string): number {
  const match = /^(\d+(?:\.\d+)?)([dh])$/.exec(value.trim());
  const days = match ? Number(match[1]) / (match[2] === "h" ? 24 : 1) : undefined;
  if (days === undefined || parseBounded("ttlDays", String(days)) === undefined) {
    throw new InvalidArgumentError(
      `expected an age such as 30d or 12h (days or hours, above 0, at most ${BOUNDS.ttlDays.max}d)`,
    );
  }
  return days;
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

/**
 * A model name: any non-blank text (an empty `--model ""` would silently mean "the eval's own").
 *
 * @example modelName("gpt-4o-mini") // "gpt-4o-mini"
 */
export function modelName(value: string): string {
  if (value.trim() === "")
    throw new InvalidArgumentError("expected a model name, not an empty one");
  return value;
}

/**
 * `--rpm` / `--tpm` as the main model's rate limit, spread into a run, resume or worker request.
 *
 * @example rateLimitFlag({ rpm: 500 }) // { rateLimit: { rpm: 500 } }
 */
export function rateLimitFlag(flags: { rpm?: number; tpm?: number }): {
  rateLimit?: { rpm?: number; tpm?: number };
} {
  if (flags.rpm === undefined && flags.tpm === undefined) return {};
  return {
    rateLimit: {
      ...(flags.rpm === undefined ? {} : { rpm: flags.rpm }),
      ...(flags.tpm === undefined ? {} : { tpm: flags.tpm }),
    },
  };
}
