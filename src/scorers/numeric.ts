import type { Scorer } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { outputText, targetStrings } from "./targets.js";

export interface NumericOptions {
  /** Largest accepted difference. Default 1e-9. */
  tolerance?: number;
  /** Read `tolerance` as a fraction of the target (0.01 = within 1 %). Default false. */
  relative?: boolean;
}

// A sign only when not glued to a preceding word ("pages 10-20" ends in 20, not -20).
const NUMBER =
  /(?:(?<![\w)])[-+])?(?<![\d.])(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?/g;

/**
 * 1 when the number in the output is within tolerance of the target (or any target). A bare
 * number is read as is; otherwise the last number in the text is taken ("… so the answer is
 * 1,234.5" → 1234.5).
 *
 * @example scorers.numeric({ tolerance: 0.01, relative: true })
 */
export function numeric(options: NumericOptions = {}): Scorer {
  const { tolerance = 1e-9, relative = false } = options;
  return {
    name: "numeric",
    describe: () => ({ kind: "numeric", tolerance, relative }),
    score: ({ sample, output }) => {
      const targets = targetStrings(sample, "numeric").map((t) => {
        const value = parseNumber(t);
        if (value === undefined)
          throw new Error(
            `scorer "numeric": target "${t}" of sample "${sample.id}" is not a number`,
          );
        return value;
      });
      const answer = extractNumber(output);
      if (answer === undefined) return { value: 0, explanation: "no number in the output" };
      const ok = targets.some(
        (t) => Math.abs(answer - t) <= (relative ? tolerance * Math.abs(t) : tolerance),
      );
      return { value: ok, answer: String(answer) };
    },
  };
}

/**
 * The number an output states: the output itself when it is a bare number, else the last
 * number in its text.
 *
 * @example extractNumber("so 12 apples cost $3.50") // 3.5
 */
export function extractNumber(output: Json): number | undefined {
  if (typeof output === "number") return output;
  const text = outputText(output);
  const bare = parseNumber(text);
  if (bare !== undefined) return bare;
  const last = [...text.matchAll(NUMBER)].at(-1)?.[0];
  return last === undefined ? undefined : parseNumber(last);
}

function parseNumber(text: string): number | undefined {
  const cleaned = text
    .trim()
    .replace(/^\$/, "")
    .replace(/,(?=\d{3}\b)/g, "");
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(cleaned)) return undefined;
  return Number(cleaned);
}
