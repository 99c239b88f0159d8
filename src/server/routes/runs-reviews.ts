import { Hono } from "hono";
import * as z from "zod";
import type { ReviewsView } from "../../api/contract.js";
import { reviewInputSchema } from "../../core/review-input.js";
import { REVIEW_LIMITS } from "../../core/reviews.js";
import { listReviews } from "../../runs/list-reviews.js";
import { recordReviews } from "../../runs/record-reviews.js";
import type { AppDeps } from "../app-deps.js";
import { parseBody } from "../validate.js";

/** At most this many reviews in one request. */
const MAX_BATCH = 1000;

/** A body that is one review is read as a batch of one (its errors name `body.reviews.0`). */
const reviewsBody = z.preprocess(
  (body) =>
    typeof body === "object" && body !== null && !Array.isArray(body) && !("reviews" in body)
      ? { reviews: [body] }
      : body,
  z
    .object({
      reviewer: z.string().min(1).max(REVIEW_LIMITS.reviewer).optional(),
      reviews: z.array(reviewInputSchema).min(1).max(MAX_BATCH),
    })
    .strict(),
);

/**
 * POST /runs/:id/reviews: stores one review (the body is a review) or many (`{ reviewer?,
 * reviews: [...] }`), each a scoring of its key's current attempt by its reviewer (the review's
 * `reviewer`, the body's, else the server's `STET_REVIEWER`); all or none. 201 with the stored
 * reviews; 400 `invalid_request` naming the review and field at fault; 404 `run_not_found`.
 * GET /runs/:id/reviews: every review, oldest first, superseded ones too (`current: false`).
 *
 * @example app.route("/api", runsReviewsRoutes(deps));
 */
export function runsReviewsRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs/:id/reviews", async (c) => {
    const runId = c.req.param("id");
    const body = await parseBody(c, reviewsBody);
    const reviewer = body.reviewer ?? deps.reviewer;
    const stored = await recordReviews({
      store: deps.store,
      runId,
      reviews: body.reviews,
      ...(reviewer === undefined ? {} : { reviewer }),
      where: (i) => `body.reviews.${i}`,
    });
    const view: ReviewsView = { runId, reviews: stored.map((r) => ({ ...r, current: true })) };
    return c.json(deps.redact(view), 201);
  });

  app.get("/runs/:id/reviews", async (c) => {
    const runId = c.req.param("id");
    const view: ReviewsView = { runId, reviews: await listReviews(deps.store, runId) };
    return c.json(deps.redact(view));
  });

  return app;
}
