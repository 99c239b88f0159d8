/** The benchmark page's comparison of two chosen runs: delta, interval, p and regressed samples. */
import { getJson } from "./api.js";
import { fill, h, score, type Child } from "./dom.js";
import { link, message, runHref } from "./shared.js";
import type { RunDiffView } from "../api/contract.js";

/** How many regressed samples are linked per scorer. */
const REGRESSED_SHOWN = 50;

/**
 * Two selects (baseline A, compared B: by default the second newest and the newest run) and
 * the comparison of the chosen pair, asked of GET /api/diff.
 */
export function runDiffSection(runIds: readonly string[], signal: AbortSignal): HTMLElement {
  const result = h("div", { class: "diff-result" });
  const select = (label: string, chosen: string | undefined) =>
    h(
      "select",
      { "aria-label": label },
      runIds.map((id) => h("option", { value: id, selected: id === chosen }, id)),
    ) as HTMLSelectElement;
  const a = select("Baseline run", runIds[1] ?? runIds[0]);
  const b = select("Compared run", runIds[0]);
  const compare = async (): Promise<void> => {
    fill(result, h("p", { class: "muted" }, "Comparing…"));
    try {
      const query = `a=${encodeURIComponent(a.value)}&b=${encodeURIComponent(b.value)}`;
      fill(result, diffTable(await getJson<RunDiffView>(`/api/diff?${query}`, signal)));
    } catch (error) {
      if (!signal.aborted) fill(result, h("p", { class: "error" }, message(error)));
    }
  };
  const section = h(
    "section",
    { class: "diff" },
    h("h2", {}, "Compare two runs"),
    h(
      "form",
      {
        onsubmit: (event: Event) => {
          event.preventDefault();
          void compare();
        },
      },
      h("label", {}, "A ", a),
      h("label", {}, " B ", b),
      h("button", { type: "submit" }, "Compare"),
    ),
    result,
  );
  if (runIds.length > 1) void compare();
  return section;
}

function diffTable(d: RunDiffView): Child[] {
  const signed = (v: number | null) => (v === null ? "—" : `${v > 0 ? "+" : ""}${v.toFixed(3)}`);
  const p = (v: number) => (v < 0.0001 ? v.toExponential(2) : v.toFixed(4));
  const rows = d.scorers.map((s) =>
    h(
      "tr",
      { "data-scorer": s.scorer, class: s.significantRegression ? "regression" : null },
      h("td", {}, s.scorer),
      h("td", {}, String(s.paired)),
      h("td", {}, score(s.meanA)),
      h("td", {}, score(s.meanB)),
      h("td", { class: "delta" }, signed(s.delta)),
      h(
        "td",
        { class: "ci" },
        s.ciLow === null ? "—" : `[${signed(s.ciLow)}, ${signed(s.ciHigh)}]`,
      ),
      h(
        "td",
        { class: "p" },
        s.paired === 0 ? "—" : p(s.pValue),
        s.significantRegression && " significant regression",
      ),
      h("td", {}, s.test),
      h("td", { class: "counts" }, `+${s.improved} −${s.regressed} =${s.unchanged}`),
    ),
  );
  const regressed = d.scorers
    .filter((s) => s.regressedIds.length > 0)
    .map((s) =>
      h(
        "p",
        { class: "regressed", "data-scorer": s.scorer },
        `Regressed on ${s.scorer} (${s.regressedIds.length}): `,
        s.regressedIds
          .slice(0, REGRESSED_SHOWN)
          .map((id, i) => [
            i > 0 && ", ",
            link(`${runHref(d.runB)}/samples/${encodeURIComponent(id)}`, id),
          ]),
        s.regressedIds.length > REGRESSED_SHOWN && " …",
      ),
    );
  const only = (label: string, ids: string[]) =>
    ids.length > 0 && h("p", { class: "muted" }, `${label}: ${ids.length} sample(s)`);
  return [
    h(
      "table",
      { class: "diff" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Scorer", "n", "Mean A", "Mean B", "Delta", "95% CI", "p", "Test", "Samples"].map((c) =>
            h("th", {}, c),
          ),
        ),
      ),
      h("tbody", {}, rows),
    ),
    ...regressed,
    only(`Only in ${d.runA}`, d.onlyInA),
    only(`Only in ${d.runB}`, d.onlyInB),
    only("Changed content (not paired)", d.changed),
  ];
}
