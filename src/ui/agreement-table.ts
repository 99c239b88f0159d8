/** How far each human scorer agrees with each judged scorer: rate, Cohen's κ, confusion matrix. */
import { h } from "./dom.js";
import type { RunDetailView } from "../api/contract.js";

type Agreement = NonNullable<RunDetailView["agreement"]>[number];

export function agreementTable(agreements: readonly Agreement[]): HTMLElement {
  return h(
    "table",
    { class: "agreement" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Human", "Scorer", "Keys", "Agree", "Cohen's κ (95%)", "Matrix (human rows)"].map((c) =>
          h("th", {}, c),
        ),
      ),
    ),
    h(
      "tbody",
      {},
      agreements.map((a) =>
        h(
          "tr",
          {},
          h("td", {}, a.human),
          h("td", {}, a.scorer),
          h("td", {}, a.n),
          h("td", {}, a.rate === null ? "-" : `${(a.rate * 100).toFixed(1)}%`),
          h(
            "td",
            {},
            a.kappa === null
              ? "-"
              : a.kappa.toFixed(3) +
                  (a.interval
                    ? ` (${a.interval.low.toFixed(3)} to ${a.interval.high.toFixed(3)})`
                    : ""),
          ),
          h("td", {}, matrix(a)),
        ),
      ),
    ),
  );
}

function matrix(a: Agreement): HTMLElement {
  return h(
    "table",
    { class: "matrix" },
    h(
      "tr",
      {},
      h("th", {}, ""),
      a.categories.map((c) => h("th", {}, c)),
    ),
    a.categories.map((c, i) =>
      h(
        "tr",
        {},
        h("th", {}, c),
        a.matrix[i]!.map((n) => h("td", {}, n)),
      ),
    ),
  );
}
