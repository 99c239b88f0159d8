import type { Scorer } from "../core/eval.js";
import { outputText, targetStrings } from "./targets.js";

export interface IncludesOptions {
  /** Default true. */
  caseSensitive?: boolean;
  /** Look for this text instead of the sample's target(s). */
  substring?: string;
}

/**
 * 1 when the output contains the target (or any of the targets), else 0.
 *
 * @example scorers.includes({ caseSensitive: false }) // "The answer is PARIS." includes "paris"
 */
export function includes(options: IncludesOptions = {}): Scorer {
  const fold = options.caseSensitive === false ? (s: string) => s.toLowerCase() : (s: string) => s;
  return {
    name: "includes",
    describe: () => ({
      kind: "includes",
      caseSensitive: options.caseSensitive !== false,
      ...(options.substring === undefined ? {} : { substring: options.substring }),
    }),
    score: ({ sample, output }) => {
      const text = fold(outputText(output));
      const needles =
        options.substring === undefined ? targetStrings(sample, "includes") : [options.substring];
      const found = needles.find((needle) => text.includes(fold(needle)));
      return found === undefined ? { value: 0 } : { value: 1, answer: found };
    },
  };
}
