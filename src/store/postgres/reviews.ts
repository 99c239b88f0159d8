import type { Review, ReviewDraft } from "../../core/reviews.js";
import {
  REVIEW_SQL,
  checkReviewDrafts,
  reviewListParams,
  reviewParams,
  toReview,
  unreviewable,
  type ReviewRow,
} from "../review-rows.js";
import type { ReviewFilter, ReviewStore } from "../types.js";
import type { PostgresContext } from "./context.js";
import { statement, transaction } from "./driver.js";

/** The reviews' statements (SQL shared with SQLite). */
const reviewStatements = {
  insert: statement(REVIEW_SQL.insert),
  attemptExists: statement(REVIEW_SQL.attemptExists),
  list: statement(REVIEW_SQL.list),
};

/** Reviews (`ReviewStore`) in PostgreSQL; each batch is one transaction. */
export function postgresReviews(c: PostgresContext): ReviewStore {
  const s = reviewStatements;
  return {
    async record(runId: string, drafts: readonly ReviewDraft[]): Promise<Review[]> {
      return c.guard(async () => {
        checkReviewDrafts(drafts);
        return transaction(c.pool, async (tx) => {
          const stored: Review[] = [];
          for (const draft of drafts) {
            const params = reviewParams(runId, draft);
            const [found] = await s.attemptExists.rows(tx, params);
            if (!found) throw unreviewable(runId, draft);
            const [row] = await s.insert.rows<{ seq: string }>(tx, params);
            if (!row) throw new Error("the review was not stored");
            stored.push({ ...draft, runId, seq: Number(row.seq) });
          }
          return stored;
        });
      });
    },
    async list(runId: string, filter?: ReviewFilter): Promise<Review[]> {
      return c.guard(async () =>
        (await s.list.rows<ReviewRow>(c.pool, reviewListParams(runId, filter))).map(toReview),
      );
    },
  };
}
