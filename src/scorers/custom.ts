import type { Scorer, ScorerArgs, ScoreValue } from "../core/eval.js";
import { StetError } from "../core/errors.js";

/**
 * A scorer from your own function. It returns a number in [0, 1], a boolean, or
 * `{ value, answer?, explanation?, metadata? }`; throwing makes its score an error (the other
 * scorers' stand) and the attempt a scorer error.
 *
 * @example scorers.custom("short", ({ output }) => String(output).length < 100)
 */
export function custom(
  name: string,
  fn: (args: ScorerArgs) => Promise<ScoreValue> | ScoreValue,
): Scorer {
  if (typeof name !== "string" || name.trim() === "") {
    throw new StetError("E_CONFIG", "scorers.custom(name, fn) needs a non-empty name");
  }
  if (typeof fn !== "function") {
    throw new StetError("E_CONFIG", `scorers.custom("${name}", fn) needs a function`);
  }
  return { name, score: fn };
}
