import type { Usage } from "../core/types.js";

/**
 * A scorer's failure that was paid for: a judge whose reply could not be read, or that broke
 * after its model call. The engine adds `usage` to the attempt's (or the scoring's) spend and
 * makes this scorer's score an error; the other scorers' scores stand. Any thrown value with a
 * valid `usage` field is read the same way.
 *
 * @example throw new ScorerError(`scorer "judge": no grade in the reply`, { usage: reply.usage });
 */
export class ScorerError extends Error {
  override readonly name = "ScorerError";
  /** What the failed scoring cost (a judge's tokens, and cost when its price is known). */
  readonly usage: Usage | undefined;

  constructor(message: string, options: { usage?: Usage | undefined; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.usage = options.usage;
  }
}
