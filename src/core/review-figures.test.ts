import { describe, expect, it } from "vitest";
import { reviewFigures, type ReviewedOutcome } from "./review-figures.js";
import { currentReviews, type Review } from "./reviews.js";

let seq = 0;
function review(sampleId: string, value: number, overrides: Partial<Review> = {}): Review {
  seq += 1;
  return {
    runId: "r_1",
    seq,
    sampleId,
    epoch: 1,
    attempt: 1,
    scorer: "human",
    reviewer: "ada",
    value,
    note: null,
    createdAt: "2025-01-01T00:00:00.000Z",
    ...overrides,
  };
}

function outcome(sampleId: string, judge: number | null, attempt = 1): ReviewedOutcome {
  return { sampleId, epoch: 1, attempt, scores: [{ scorer: "judge", value: judge }] };
}

describe("currentReviews", () => {
  it("keeps each reviewer's latest review of a key, and only of its current attempt", () => {
    const first = review("a", 1);
    const again = review("a", 0, { note: "changed my mind" });
    const other = review("a", 1, { reviewer: "grace" });
    const stale = review("b", 1, { attempt: 1 });
    const current = currentReviews([first, again, other, stale], (k) =>
      k.sampleId === "a" ? 1 : 2,
    );
    expect(current).toEqual([again, other]);
  });
});

describe("reviewFigures", () => {
  it("gives the human scorer's mean over samples and its agreement with the judge", () => {
    const reviews = [
      review("a", 1),
      review("b", 0),
      review("c", 1),
      review("d", 0),
      // Superseded: the second review of d by the same reviewer counts.
      review("d", 1),
      // Two reviewers on e: the key's value is their mean.
      review("e", 1),
      review("e", 0, { reviewer: "grace" }),
    ];
    const outcomes = [outcome("a", 1), outcome("b", 1), outcome("c", 1), outcome("d", 1)];
    outcomes.push(outcome("e", null));
    const figures = reviewFigures(reviews, outcomes, ["judge"], "mean");
    // a 1, b 0, c 1, d 1, e .5: mean .7; sd = √(((.3² × 3) + .7² + .2²) / 4) = √.2 …
    expect(figures.metrics).toHaveLength(1);
    expect(figures.metrics[0]).toMatchObject({ scorer: "human", samples: 5 });
    expect(figures.metrics[0]!.mean).toBeCloseTo(0.7, 12);
    expect(figures.metrics[0]!.stderr).toBeCloseTo(Math.sqrt(0.2 / 5), 12);
    // e has no judged value: four pairs, human [1, 0, 1, 1] against judge [1, 1, 1, 1].
    expect(figures.agreement).toEqual([
      expect.objectContaining({ human: "human", scorer: "judge", n: 4, rate: 0.75 }),
    ]);
    expect(figures.agreement[0]!.matrix).toEqual([
      [0, 1],
      [0, 3],
    ]);
    // A judge that passes everything agrees by chance alone: pe = .75 = po, κ = 0.
    expect(figures.agreement[0]!.kappa).toBe(0);
  });

  it("has nothing without reviews", () => {
    expect(reviewFigures([], [outcome("a", 1)], ["judge"], "mean")).toEqual({
      metrics: [],
      agreement: [],
    });
  });
});
