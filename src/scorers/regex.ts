import type { Scorer } from "../core/eval.js";
import { outputText } from "./targets.js";

/**
 * 1 when the output matches the pattern, else 0. The answer is the first capture group
 * when there is one, else the whole match.
 *
 * @example scorers.regex(/^ANSWER: (\d+)$/m)
 * @example scorers.regex("^\\d{4}-\\d{2}-\\d{2}$")
 */
export function regex(pattern: string | RegExp, flags?: string): Scorer {
  const source = typeof pattern === "string" ? pattern : pattern.source;
  // A global or sticky RegExp keeps lastIndex between calls; the scorer must be stateless.
  const cleanFlags = (flags ?? (typeof pattern === "string" ? "" : pattern.flags)).replace(
    /[gy]/g,
    "",
  );
  const re = new RegExp(source, cleanFlags);
  return {
    name: "regex",
    describe: () => ({ kind: "regex", pattern: source, flags: cleanFlags }),
    score: ({ output }) => {
      const match = re.exec(outputText(output));
      if (match === null) return { value: 0 };
      return { value: 1, answer: match[1] ?? match[0] };
    },
  };
}
