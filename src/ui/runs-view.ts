/** The runs page: every run with status, progress, score and cost, and a form to start one. */
import { getJson, sse } from "./api.js";
import { badge, bar, fill, h, score, totalCost, when } from "./dom.js";
import { link, message, pause, runHref, waitingOn } from "./shared.js";
import type { EvalsView, ExecutionEvents, RunsPageView } from "../api/contract.js";

export async function runsView(main: HTMLElement, signal: AbortSignal): Promise<void> {
  const evals = await getJson<EvalsView>("/api/evals", signal);
  const table = h("tbody");
  const notice = h("p", { class: "notice", role: "status" });
  fill(
    main,
    h("h1", {}, "Runs"),
    evals.evals.length > 0 && startForm(evals.evals, notice),
    notice,
    h(
      "table",
      { class: "runs" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Run", "Eval", "Status", "Progress", "Score", "Cost", "Started"].map((c) =>
            h("th", {}, c),
          ),
        ),
      ),
      table,
    ),
  );
  for (;;) {
    // One request: the listing carries status, progress, metrics and cost of every run.
    const { runs } = await getJson<RunsPageView>("/api/runs?limit=50", signal);
    fill(
      table,
      runs.length === 0 && h("tr", {}, h("td", { colspan: 7 }, "No runs yet.")),
      runs.map((run) =>
        h(
          "tr",
          { "data-run": run.id },
          h("td", {}, link(runHref(run.id), run.id)),
          h("td", {}, link(`#/benchmarks/${encodeURIComponent(run.evalName)}`, run.evalName)),
          h(
            "td",
            {},
            badge(run.status),
            run.distributed &&
              h(
                "span",
                { class: "distributed" },
                run.status === "running"
                  ? ` distributed · ${run.activeWorkers ?? 0} worker${run.activeWorkers === 1 ? "" : "s"}`
                  : " distributed",
              ),
            waitingOn(run.batches) !== "" &&
              h("span", { class: "batches" }, ` ${waitingOn(run.batches)}`),
          ),
          h(
            "td",
            { class: "progress" },
            bar(run.counts.done, run.counts.errored, run.counts.total),
            h("span", {}, `${run.counts.done}/${run.counts.total}`),
            run.counts.errored > 0 && h("span", { class: "err" }, ` · ${run.counts.errored} err`),
          ),
          h(
            "td",
            {},
            run.metrics[0] ? `${run.metrics[0].scorer} ${score(run.metrics[0].mean)}` : "—",
          ),
          h("td", {}, totalCost(run.cost.spent)),
          h("td", {}, when(run.createdAt)),
        ),
      ),
    );
    await pause(runs.some((r) => r.status === "running") ? 1_000 : 5_000, signal);
  }
}

function startForm(evals: { name: string }[], notice: HTMLElement): HTMLElement {
  const select = h(
    "select",
    { name: "eval" },
    evals.map((e) => h("option", { value: e.name }, e.name)),
  ) as HTMLSelectElement;
  const button = h("button", { type: "submit" }, "Start run") as HTMLButtonElement;
  return h(
    "form",
    {
      class: "start",
      onsubmit: (event: Event) => {
        event.preventDefault();
        button.disabled = true;
        void startRun(select.value, notice).finally(() => (button.disabled = false));
      },
    },
    h("label", {}, "Eval ", select),
    button,
  );
}

/** POST /api/runs streams the run; the UI follows it on the run's page (the run goes on anyway). */
async function startRun(evalName: string, notice: HTMLElement): Promise<void> {
  const stop = new AbortController();
  try {
    for await (const e of sse<ExecutionEvents>(
      "/api/runs",
      { method: "POST", body: { eval: evalName } },
      stop.signal,
    )) {
      if (e.event === "started") {
        location.hash = runHref(e.data.runId);
        return;
      }
      if (e.event === "error") throw new Error(e.data.message);
    }
  } catch (error) {
    fill(notice, h("span", { class: "error" }, message(error)));
  } finally {
    stop.abort();
  }
}
