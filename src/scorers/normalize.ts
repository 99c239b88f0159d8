import type { Scorer, ScorerLike } from "../core/eval.js";
import { StetError } from "../core/errors.js";

/**
 * Accepts a `Scorer` or a plain function named after itself. An anonymous function has no
 * name to report under, so it is refused with a StetError (E_CONFIG).
 *
 * @example toScorer(function exactish({ output }) { return output === "4"; }).name // "exactish"
 */
export function toScorer(scorer: ScorerLike): Scorer {
  if (typeof scorer === "function") {
    const name = scorer.name.replace(/^bound /, "");
    if (name === "" || name === "anonymous") {
      throw new StetError(
        "E_CONFIG",
        'an anonymous function cannot be a scorer: its scores need a name. Use scorers.custom("my_name", fn) or a named function',
      );
    }
    return { name, score: scorer };
  }
  if (typeof scorer.name !== "string" || scorer.name === "" || typeof scorer.score !== "function") {
    throw new StetError("E_CONFIG", "a scorer needs a non-empty name and a score function");
  }
  return scorer;
}
