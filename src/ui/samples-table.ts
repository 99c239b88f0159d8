/** A run's samples: the filters above the table, and the paged table itself. */
import { badge, h, preview, score, type Child } from "./dom.js";
import { link, runHref } from "./shared.js";
import type { AttemptSummaryView, RunDetailView, SamplePageView } from "../api/contract.js";

export function sampleFilters(run: RunDetailView, onChange: () => void) {
  const control = (tag: string, attrs: Record<string, string>, ...options: [string, string][]) => {
    const element = h(
      tag,
      { ...attrs, onchange: onChange },
      options.map(([value, text]) => h("option", { value }, text)),
    ) as HTMLSelectElement | HTMLInputElement;
    return element;
  };
  const status = control(
    "select",
    { name: "status", "aria-label": "Status" },
    ["", "any status"],
    ["scored", "scored"],
    ["error", "error"],
    ["pending", "pending"],
  );
  const result = control(
    "select",
    { name: "result", "aria-label": "Result" },
    ["", "any result"],
    ["pass", "pass"],
    ["fail", "fail"],
  );
  const scorer = control(
    "select",
    { name: "scorer", "aria-label": "Scorer" },
    ["", "any scorer"],
    ...run.config.scorers.map((s): [string, string] => [s, s]),
  );
  const search = h("input", {
    name: "search",
    "aria-label": "Search",
    type: "search",
    placeholder: "search id, input, output",
  }) as HTMLInputElement;
  let typing: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(onChange, 250);
  });
  return {
    form: h("div", { class: "filters" }, status, result, scorer, search),
    query(offset: number): string {
      const params = new URLSearchParams({ limit: "50", offset: String(offset) });
      for (const c of [status, result, scorer, search]) if (c.value) params.set(c.name, c.value);
      return params.toString();
    },
  };
}

export function samplesTable(
  runId: string,
  list: SamplePageView,
  page: { offset: number },
  redraw: () => void,
): Child[] {
  const move = (offset: number) => () => {
    page.offset = offset;
    redraw();
  };
  return [
    h(
      "table",
      { class: "samples" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Sample", "Epoch", "Status", "Input", "Target", "Output", "Scores", "Attempts"].map(
            (c) => h("th", {}, c),
          ),
        ),
      ),
      h(
        "tbody",
        {},
        list.samples.length === 0 && h("tr", {}, h("td", { colspan: 8 }, "No samples match.")),
        list.samples.map((s) =>
          h(
            "tr",
            { "data-sample": s.sampleId },
            h(
              "td",
              {},
              link(`${runHref(runId)}/samples/${encodeURIComponent(s.sampleId)}`, s.sampleId),
            ),
            h("td", {}, s.epoch),
            h("td", {}, badge(s.status)),
            h("td", { class: "input" }, preview(s.input)),
            h("td", { class: "target" }, s.target == null ? "—" : preview(s.target)),
            h("td", { class: "output" }, s.outcome ? outputText(s.outcome) : ""),
            h("td", {}, s.outcome ? scoresText(s.outcome) : "—"),
            h("td", {}, s.attempts),
          ),
        ),
      ),
    ),
    h(
      "p",
      { class: "pager" },
      `${list.total === 0 ? 0 : list.offset + 1}–${list.offset + list.samples.length} of ${list.total} `,
      list.offset > 0 &&
        h("button", { onclick: move(Math.max(0, list.offset - list.limit)) }, "Previous"),
      list.offset + list.samples.length < list.total &&
        h("button", { onclick: move(list.offset + list.limit) }, "Next"),
    ),
  ];
}

function scoresText(attempt: AttemptSummaryView): string {
  return attempt.scores.map((s) => `${s.scorer} ${score(s.value)}`).join(", ");
}

function outputText(attempt: AttemptSummaryView): string {
  return attempt.status === "error" && attempt.error
    ? `${attempt.error.type}: ${preview(attempt.error.message)}`
    : preview(attempt.output);
}
