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
import type { SqliteContext } from "./context.js";
import { immediate } from "./driver.js";
import { prepareTable, sql } from "./statements.js";

/** The reviews' statements (SQL shared with PostgreSQL). */
const SQLITE_REVIEW_STATEMENTS = {
  insert: sql<{ seq: number }>(REVIEW_SQL.insert),
  attemptExists: sql<{ found: number }>(REVIEW_SQL.attemptExists),
  list: sql<ReviewRow>(REVIEW_SQL.list),
};

/** Reviews (`ReviewStore`) in SQLite; each batch is one IMMEDIATE transaction. */
export function sqliteReviews(c: SqliteContext): ReviewStore {
  let prepared: ReturnType<typeof prepareTable<typeof SQLITE_REVIEW_STATEMENTS>> | undefined;
  const s = () => (prepared ??= prepareTable(c.db, SQLITE_REVIEW_STATEMENTS));
  return {
    async record(runId: string, drafts: readonly ReviewDraft[]): Promise<Review[]> {
      return c.guard(() => {
        checkReviewDrafts(drafts);
        return immediate(c.db, () =>
          drafts.map((draft) => {
            const params = reviewParams(runId, draft);
            if (!s().attemptExists.get(params)) throw unreviewable(runId, draft);
            const row = s().insert.get(params);
            if (!row) throw new Error("the review was not stored");
            return { ...draft, runId, seq: Number(row.seq) };
          }),
        );
      });
    },
    async list(runId: string, filter?: ReviewFilter): Promise<Review[]> {
      return c.guard(() => s().list.all(reviewListParams(runId, filter)).map(toReview));
    },
  };
}
