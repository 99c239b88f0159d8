/** A run's rate limits on its page: the figures per endpoint, and whether it waits on one now. */
import type { RunDetailView } from "../api/contract.js";
import { h, type Child } from "./dom.js";

type RateFigures = NonNullable<RunDetailView["rateLimits"]>;

/**
 * The requests of a running run waiting on a rate limit now (its endpoint's budget, a pause after
 * a 429, the in-flight cap), for its progress line; nothing when none waits.
 *
 * @example rateWaitingNote(3) // <span class="rate-waiting">waiting on a rate limit (3 requests)</span>
 */
export function rateWaitingNote(waiting: number | undefined): Child {
  if (!waiting) return false;
  return h(
    "span",
    { class: "rate-waiting", role: "status" },
    ` · waiting on a rate limit (${waiting} request${waiting === 1 ? "" : "s"})`,
  );
}

/** The requests waiting now over every endpoint, as the run's processes last recorded them. */
export function waitingOf(figures: RateFigures | undefined): number {
  return (figures ?? []).reduce((sum, w) => sum + (w.waiting ?? 0), 0);
}

/**
 * The run's rate-limit figures per endpoint (and API key, by its keyed hash): requests sent,
 * those that waited, 429s received, and the time requests spent waiting (summed over them).
 */
export function rateLimitsTable(figures: RateFigures | undefined): Child {
  if (!figures || figures.length === 0) return false;
  const columns = ["Endpoint", "Requests", "Throttled", "429s", "Time waiting"];
  return h(
    "section",
    { class: "rate-limits" },
    h("h2", {}, "Rate limits"),
    h(
      "table",
      { class: "rate-limits" },
      h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", {}, c)))),
      h(
        "tbody",
        {},
        figures.map((w) =>
          h(
            "tr",
            { "data-endpoint": w.endpoint },
            h("td", {}, w.endpoint),
            h("td", {}, w.requests),
            h("td", {}, w.throttled),
            h("td", {}, w.rejected),
            h("td", {}, seconds(w.waitMs)),
          ),
        ),
      ),
    ),
  );
}

/** A time as "2.5s" (summed over requests, it may exceed the run's duration). */
function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
