/** One run: live progress, metrics, cost, Resume and Cancel, and its samples. */
import { getJson, sse } from "./api.js";
import { badge, bar, fill, h, score, tokens, totalCost, when, type Child } from "./dom.js";
import { runActions } from "./run-actions.js";
import { sampleFilters, samplesTable } from "./samples-table.js";
import { link, message, pause, waitingOn } from "./shared.js";
import { throttled } from "./throttle.js";
import type { FollowEvents, RunDetailView, SamplePageView, WorkerView } from "../api/contract.js";
import { agreementTable } from "./agreement-table.js";
import { rateLimitsTable, rateWaitingNote, waitingOf } from "./rate-limits-view.js";
import { distributionChartSvg } from "../core/score-chart.js";

export async function runView(
  main: HTMLElement,
  runId: string,
  signal: AbortSignal,
): Promise<void> {
  const summary = h("section", { class: "summary" });
  const samples = h("section", { class: "samples" });
  const notice = h("p", { class: "notice", role: "status" });
  fill(main, h("p", {}, link("#/", "← Runs")), summary, notice, samples);

  /** Runs work started by a click; a failure shows in the notice, unless the view was left. */
  const background = (work: () => Promise<void>) => () => {
    Promise.resolve()
      .then(work)
      .catch((error: unknown) => {
        if (!signal.aborted) fill(notice, h("span", { class: "error" }, message(error)));
      });
  };

  let run = await loadRun(runId, signal);
  const filters = sampleFilters(
    run,
    background(() => drawSamples()),
  );
  const page = { offset: 0 };
  const drawSamples = async () => {
    const list = await getJson<SamplePageView>(
      `/api/runs/${encodeURIComponent(runId)}/samples?${filters.query(page.offset)}`,
      signal,
    );
    fill(
      samples,
      h("h2", {}, "Samples"),
      filters.form,
      samplesTable(runId, list, page, background(drawSamples)),
    );
  };

  const head = h("div", { class: "head" });
  const progress = h("div", { class: "progress" });
  const details = h("div", { class: "details" });
  fill(summary, head, progress, details);
  let drawnHead = "";
  // Requests waiting on a rate limit now: the run's figures, then each progress event's word.
  let rateWaiting = waitingOf(run.rateLimits);
  const draw = () => {
    // Replacing the buttons under a pointer would swallow a click: redraw them only on change.
    const live = isExecuting(run);
    // The count on Resume matters only when Resume is shown (the run is not executing).
    const shape = JSON.stringify([
      run.status,
      live,
      run.owner?.pid,
      live ? null : run.counts.remaining,
      run.note,
      run.activeWorkers,
    ]);
    if (shape !== drawnHead) {
      drawnHead = shape;
      fill(
        head,
        runHead(run, {
          resume: background(actions.resume),
          rescore: background(actions.rescore),
          cancel: background(actions.cancel),
        }),
      );
    }
    fill(progress, runProgress(run), live && rateWaitingNote(rateWaiting));
    fill(details, runDetails(run));
  };
  const refresh = async () => {
    run = await loadRun(runId, signal);
    rateWaiting = waitingOf(run.rateLimits);
    draw();
    await drawSamples();
  };

  const actions = runActions({ runId, signal, notice, refresh, follow: () => follow() });

  /**
   * Follows a live run's progress from the store until it ends. Counts redraw at once; metrics
   * and samples (a fold of every attempt on the server) refresh with the progress events,
   * throttled: at most every 2 s, and for a large run no more often than every 5× the time the
   * last refresh took. The last progress is never left unrefreshed (the throttle's trailing
   * edge), so metrics catch up with the counts even while no sample finishes.
   */
  const follow = async () => {
    const live = throttled(
      refresh,
      (took) => Math.max(2_000, 5 * took),
      signal,
      (error) => fill(notice, h("span", { class: "error" }, message(error))),
    );
    const events = sse<FollowEvents>(`/api/runs/${encodeURIComponent(runId)}/events`, {}, signal);
    for await (const e of events) {
      if (e.event === "progress") {
        const { total, done, errored, remaining } = e.data;
        run = { ...run, counts: { ...run.counts, total, done, errored, remaining } };
        rateWaiting = e.data.rateWaiting ?? 0;
        draw();
        live.request();
      } else if (e.event === "completed") {
        // After any refresh still in flight, so an older reading never draws over the final one.
        await live.flush();
        return;
      }
    }
  };
  /**
   * A distributed run's workers change without its counts changing (heartbeats, joins, leaves):
   * the run is read again while it executes, every 2 s or 5× the time the last read took.
   */
  const watchWorkers = async () => {
    let wait = 2_000;
    while (isExecuting(run)) {
      await pause(wait, signal);
      const started = Date.now();
      run = await loadRun(runId, signal);
      rateWaiting = waitingOf(run.rateLimits);
      draw();
      wait = Math.max(2_000, 5 * (Date.now() - started));
    }
  };
  // Drawn only now that every handler the buttons call exists: a click on a button drawn
  // earlier, landing while the samples load, would have met an uninitialised handler.
  draw();
  await drawSamples();
  if (isExecuting(run)) await Promise.all([follow(), run.distributed && watchWorkers()]);
}

/** Running with a live owner, or distributed and running (its workers execute it, no owner). */
function isExecuting(run: RunDetailView): boolean {
  return run.status === "running" && (run.distributed || !!run.owner?.alive);
}

/** Saves the run's EvalPort ResultSet (fetched with the token, so a plain link would not do). */
async function downloadResultSet(runId: string): Promise<void> {
  try {
    const doc = await getJson<unknown>(`/api/runs/${encodeURIComponent(runId)}/resultset`);
    const url = URL.createObjectURL(
      new Blob([`${JSON.stringify(doc, null, 2)}\n`], { type: "application/json" }),
    );
    h("a", { href: url, download: `${runId}.resultset.json` }).click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (error) {
    alert(message(error));
  }
}

function loadRun(runId: string, signal: AbortSignal): Promise<RunDetailView> {
  return getJson<RunDetailView>(`/api/runs/${encodeURIComponent(runId)}`, signal);
}

/** Title, owner and the actions; redrawn only when they change, so a click is never lost. */
function runHead(
  run: RunDetailView,
  actions: { resume: () => void; rescore: () => void; cancel: () => void },
): Child[] {
  const { counts } = run;
  const live = isExecuting(run);
  const resumable = !live && counts.remaining > 0;
  return [
    h("h1", {}, run.id, " ", badge(run.status)),
    h(
      "p",
      { class: "meta" },
      "Eval ",
      link(`#/benchmarks/${encodeURIComponent(run.evalName)}`, run.evalName),
      run.model && ` · model ${run.model}`,
      ` · started ${when(run.createdAt)}`,
      run.note && ` · ${run.note}`,
      " · ",
      link(`#/runs/${encodeURIComponent(run.id)}/review/failed`, "Review samples"),
    ),
    Object.keys(run.labels).length > 0 &&
      h(
        "p",
        { class: "meta labels" },
        "Labels: ",
        ...Object.entries(run.labels).map(([k, v]) => h("code", { class: "label" }, `${k}=${v} `)),
      ),
    run.owner &&
      h(
        "p",
        { class: "meta" },
        `Owner: pid ${run.owner.pid} on ${run.owner.host} ` +
          (run.owner.alive ? "(alive)" : `(dead: ${run.owner.reason})`),
      ),
    run.distributed &&
      h(
        "p",
        { class: "meta distributed" },
        `Distributed: ${plural(run.activeWorkers ?? 0, "worker")} executing`,
      ),
    // A batched run left by `stet run --detach` (or stopped while its batches ran).
    waitingOn(run.batches) !== "" &&
      h("p", { class: "meta batches" }, `Batches: ${waitingOn(run.batches)}`),
    h(
      "div",
      { class: "actions" },
      resumable &&
        h(
          "button",
          { class: "resume", onclick: actions.resume },
          `Resume (${counts.remaining} left)`,
        ),
      // A distributed run's workers are all asked to stop, through the store.
      live && h("button", { class: "cancel", onclick: actions.cancel }, "Cancel"),
      // Scores the stored outputs again with the eval's scorers: no solver call.
      !live &&
        counts.done + counts.errored > 0 &&
        h(
          "button",
          { class: "rescore", title: "Score the stored outputs again", onclick: actions.rescore },
          "Rescore",
        ),
      h(
        "button",
        { class: "resultset", onclick: () => void downloadResultSet(run.id) },
        "ResultSet",
      ),
    ),
  ];
}

function runProgress({ counts }: RunDetailView): Child[] {
  return [
    bar(counts.done, counts.errored, counts.total),
    h(
      "span",
      { class: "counts" },
      `${counts.done}/${counts.total} done` +
        (counts.limited ? ` (${counts.limited} limited)` : "") +
        ` · ${counts.errored} errored · ${counts.remaining} remaining`,
    ),
  ];
}

function runDetails(run: RunDetailView): Child[] {
  return [
    run.workers && workersTable(run.workers),
    h(
      "table",
      { class: "metrics" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Scorer", "Mean ± stderr", "Samples"].map((c) => h("th", {}, c)),
        ),
      ),
      h(
        "tbody",
        {},
        run.metrics.map((m) =>
          h(
            "tr",
            {},
            h("td", {}, m.scorer),
            h("td", {}, score(m.mean, m.stderr)),
            h("td", {}, m.samples),
          ),
        ),
      ),
    ),
    run.agreement && run.agreement.length > 0 && agreementTable(run.agreement),
    run.distribution.length > 0 && scoreChart(run),
    h(
      "p",
      { class: "meta" },
      // What the run spent in all; imported outcomes (paid elsewhere) apart. Seen from no
      // invocation, nothing of the run's own spend is "reused".
      `Cost ${totalCost(run.cost.spent)} spent on this run · `,
      run.cost.reused.attempts > 0 &&
        `${totalCost(run.cost.reused)} imported (${run.cost.reused.attempts} outcomes paid elsewhere) · `,
      tokens(run.cost.spent),
    ),
    retriesLine(run.retries),
    rateLimitsTable(run.rateLimits),
    run.errors.length > 0 &&
      h(
        "div",
        { class: "meta errors" },
        ...run.errors.map((group) => {
          const more = group.count - group.examples.length;
          const quoted = group.examples.map(
            (e) => `${e.epoch > 1 ? `${e.sampleId}#${e.epoch}` : e.sampleId}: ${e.message}`,
          );
          if (more > 0) quoted.push(`… and ${more} more`);
          return h("p", {}, `Errors: ${group.type} ${group.count} — ${quoted.join("; ")}`);
        }),
      ),
  ];
}

/** The run's retries: requests re-sent over all its attempts, and keys that needed another. */
function retriesLine(retries: RunDetailView["retries"]): HTMLElement {
  return h(
    "p",
    { class: "meta retries" },
    `Retries ${plural(retries.total, "request")} re-sent · `,
    `${plural(retries.keysRetried, "key")} needed more than one attempt`,
    retries.unrecorded > 0 &&
      ` · ${plural(retries.unrecorded, "attempt")} stored before retries were counted`,
  );
}

/**
 * The score-distribution chart, drawn by the same pure module as the HTML report. Its SVG is our
 * own markup with every name escaped (`distributionChartSvg`), parsed as an SVG document (so it
 * must name its namespace: `standalone`), never as HTML.
 */
function scoreChart(run: RunDetailView): Element {
  const svg = distributionChartSvg(run.distribution, { standalone: true });
  const doc = new DOMParser().parseFromString(svg, "image/svg+xml");
  const figure = h("figure", { class: "score-chart" });
  figure.append(document.importNode(doc.documentElement, true));
  return figure;
}

/** A distributed run's workers: where each runs, what it did, and when it was last heard of. */
function workersTable(workers: WorkerView[]): HTMLElement {
  const columns = ["Worker", "Host", "Pid", "Concurrency", "Keys done", "Rejected", "State"];
  return h(
    "section",
    { class: "workers" },
    h("h2", {}, "Workers"),
    workers.length === 0
      ? h("p", { class: "meta" }, "No worker has joined yet.")
      : h(
          "table",
          { class: "workers" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              [...columns, "Heartbeat"].map((c) => h("th", {}, c)),
            ),
          ),
          h(
            "tbody",
            {},
            workers.map((w) =>
              h(
                "tr",
                { "data-worker": w.id },
                h("td", {}, w.id),
                h("td", {}, w.host),
                h("td", {}, w.pid),
                h("td", {}, w.concurrency),
                h("td", {}, w.keysDone),
                h("td", {}, w.rejected > 0 ? w.rejected : ""),
                h("td", {}, w.leaseExpired ? "active (lease expired)" : w.state),
                h("td", {}, `${age(w.heartbeatAgeMs)} ago`),
              ),
            ),
          ),
        ),
  );
}

/** A duration as "2.1s", "3m5s" or "2h4m". */
function age(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${Math.round(s % 60)}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
