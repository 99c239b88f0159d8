import type { Scorer } from "../core/eval.js";
import { outputText, targetStrings } from "./targets.js";

export interface ExactOptions {
  /** Default true. */
  caseSensitive?: boolean;
  /** Strip leading and trailing whitespace first. Default true (EvalPort's trim_whitespace). */
  trim?: boolean;
  /** Remove all whitespace before comparing. Default false. */
  ignoreWhitespace?: boolean;
}

/**
 * 1 when the output equals the target (or one of the targets), else 0.
 *
 * @example scorers.exact({ caseSensitive: false }) // "Paris" matches target "paris"
 */
export function exact(options: ExactOptions = {}): Scorer {
  const normalize = textNormalizer(options);
  return {
    name: "exact",
    describe: () => ({ kind: "exact", ...textOptions(options) }),
    score: ({ sample, output }) => {
      const answer = normalize(outputText(output));
      const match = targetStrings(sample, "exact").some((t) => normalize(t) === answer);
      return { value: match, answer };
    },
  };
}

function textOptions(options: ExactOptions): Record<string, boolean> {
  const { caseSensitive = true, trim = true, ignoreWhitespace = false } = options;
  return { caseSensitive, trim, ignoreWhitespace };
}

/** The comparison form of a text under the case and whitespace options. */
export function textNormalizer(options: ExactOptions): (text: string) => string {
  const { caseSensitive = true, trim = true, ignoreWhitespace = false } = options;
  return (text) => {
    let out = ignoreWhitespace ? text.replace(/\s+/g, "") : trim ? text.trim() : text;
    if (!caseSensitive) out = out.toLowerCase();
    return out;
  };
}
