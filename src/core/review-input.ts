import * as z from "zod";
import { REVIEW_LIMITS, REVIEW_SCORER } from "./reviews.js";

/**
 * One review as a person sends it (the API's body, a CSV row): the key, the verdict (`pass`,
 * `fail`) or a numeric `value`, a note, and optionally the scorer name, the reviewer and the
 * attempt it judged (refused when that is no longer the key's current attempt).
 */
export const reviewInputSchema = z
  .object({
    sampleId: z.string().min(1),
    epoch: z.number().int().min(1).default(1),
    attempt: z.number().int().min(1).optional(),
    scorer: z
      .string()
      .regex(REVIEW_SCORER, "must be human or human:<rubric> (letters, digits, _ . -)")
      .default("human"),
    verdict: z.enum(["pass", "fail"]).optional(),
    value: z.number().finite().optional(),
    note: z.string().max(REVIEW_LIMITS.note).optional(),
    reviewer: z.string().min(1).max(REVIEW_LIMITS.reviewer).optional(),
  })
  .strict()
  .refine((r) => (r.verdict === undefined) !== (r.value === undefined), {
    message: "give exactly one of verdict (pass or fail) and value",
  });

export type ReviewInput = z.output<typeof reviewInputSchema>;

/** A review's value: pass 1, fail 0, or the value given. */
export function reviewValue(input: Pick<ReviewInput, "verdict" | "value">): number {
  if (input.verdict !== undefined) return input.verdict === "pass" ? 1 : 0;
  return input.value!;
}
