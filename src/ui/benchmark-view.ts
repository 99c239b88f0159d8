/** A benchmark: the runs of one eval side by side, overall and per sample. */
import { getJson } from "./api.js";
import { badge, fill, h, preview, score, totalCost, type Child } from "./dom.js";
import { runDiffSection } from "./run-diff.js";
import { link, runHref } from "./shared.js";
import type { BenchmarkView } from "../api/contract.js";

export async function benchmarkView(
  main: HTMLElement,
  name: string,
  signal: AbortSignal,
): Promise<void> {
  const b = await getJson<BenchmarkView>(
    `/api/benchmarks/${encodeURIComponent(name)}?limit=100`,
    signal,
  );
  const perSample = h("section", { class: "per-sample" });
  const drawPerSample = (scorer: string): void =>
    fill(perSample, perSampleTable(b, scorer, drawPerSample));
  if (b.scorers[0] !== undefined) drawPerSample(b.scorers[0]);
  fill(
    main,
    h("p", {}, link("#/", "← Runs")),
    h("h1", {}, `Benchmark ${b.evalName}`),
    h(
      "table",
      { class: "compare" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", {}, "Run"),
          h("th", {}, "Model"),
          h("th", {}, "Status"),
          b.scorers.map((s) => h("th", {}, s)),
          h("th", {}, "Cost"),
        ),
      ),
      h(
        "tbody",
        {},
        b.runs.map((r) =>
          h(
            "tr",
            {},
            h("td", {}, link(runHref(r.id), r.id)),
            h("td", {}, r.model ?? "—"),
            h("td", {}, badge(r.status)),
            b.scorers.map((s) => {
              const m = r.metrics.find((x) => x.scorer === s);
              return h("td", {}, m ? score(m.mean, m.stderr) : "—");
            }),
            h("td", {}, totalCost(r.cost.spent)),
          ),
        ),
      ),
    ),
    runDiffSection(
      b.runs.map((r) => r.id),
      signal,
    ),
    perSample,
  );
}

/** The per-sample comparison for one scorer: each run's epoch-reduced value, linked to the sample. */
function perSampleTable(b: BenchmarkView, scorer: string, show: (scorer: string) => void): Child[] {
  return [
    h(
      "h2",
      {},
      "Per sample: ",
      b.scorers.length > 1
        ? h(
            "select",
            {
              name: "scorer",
              "aria-label": "Scorer",
              onchange: (event: Event) => show((event.target as HTMLSelectElement).value),
            },
            b.scorers.map((s) => h("option", { value: s, selected: s === scorer }, s)),
          )
        : scorer,
    ),
    h(
      "table",
      { class: "per-sample" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", {}, "Sample"),
          h("th", {}, "Input"),
          b.runs.map((r) => h("th", {}, r.id)),
        ),
      ),
      h(
        "tbody",
        {},
        b.samples.entries.map((e) =>
          h(
            "tr",
            {},
            h(
              "td",
              {},
              e.sampleId,
              e.differs &&
                h("span", { class: "tag", title: "the runs saw different content" }, "differs"),
            ),
            h("td", { class: "output" }, preview(e.input, 60)),
            b.runs.map((r) => {
              const cell = e.runs[r.id];
              const href = `${runHref(r.id)}/samples/${encodeURIComponent(e.sampleId)}`;
              return h("td", {}, cell ? link(href, score(cell.scores[scorer] ?? null)) : "—");
            }),
          ),
        ),
      ),
    ),
    b.samples.total > b.samples.entries.length &&
      h(
        "p",
        { class: "muted" },
        `First ${b.samples.entries.length} of ${b.samples.total} samples.`,
      ),
  ];
}
