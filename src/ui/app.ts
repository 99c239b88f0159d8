/**
 * stet's web UI (DESIGN §4.4), served by `stet serve` at `/`: runs, a run's detail with live
 * progress, Resume and Cancel, its samples with filters, a sample's attempt history, and the runs
 * of a benchmark side by side. Everything comes from the HTTP API; routes live in the URL hash.
 */
import { ApiFailure, getJson, postJson, setToken, sse } from "./api.js";
import { badge, bar, dollars, fill, full, h, preview, score, when, type Child } from "./dom.js";
import type {
  AttemptView,
  BenchmarkView,
  RunDetail,
  RunSummary,
  SampleDetail,
  SamplePage,
} from "./types.js";

const main = document.getElementById("main")!;
let leave: (() => void) | undefined;

/** A view draws into `main` and returns what stops its polling and streams. */
type View = (signal: AbortSignal) => Promise<void>;

function route(): void {
  leave?.();
  const stop = new AbortController();
  leave = () => stop.abort();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const view: View =
    parts[0] === "runs" && parts[1] && parts[2] === "samples" && parts[3]
      ? (s) => sampleView(parts[1]!, parts[3]!, s)
      : parts[0] === "runs" && parts[1]
        ? (s) => runView(parts[1]!, s)
        : parts[0] === "benchmarks" && parts[1]
          ? (s) => benchmarkView(parts[1]!, s)
          : runsView;
  fill(main, h("p", { class: "muted" }, "Loading…"));
  view(stop.signal).catch((error: unknown) => {
    if (stop.signal.aborted) return;
    showError(error);
  });
}

function showError(error: unknown): void {
  if (error instanceof ApiFailure && error.status === 401) {
    const input = h("input", { type: "password", name: "token", placeholder: "STET_TOKEN" });
    fill(
      main,
      h("h1", {}, "Sign in"),
      h("p", {}, "This server needs its token (STET_TOKEN)."),
      h(
        "form",
        {
          onsubmit: (event: Event) => {
            event.preventDefault();
            setToken((input as HTMLInputElement).value);
            route();
          },
        },
        input,
        h("button", { type: "submit" }, "Continue"),
      ),
    );
    return;
  }
  fill(main, h("p", { class: "error", role: "alert" }, message(error)));
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const link = (href: string, text: string) => h("a", { href }, text);
const runHref = (id: string) => `#/runs/${encodeURIComponent(id)}`;

// ---------------------------------------------------------------------------------------------
// Runs

async function runsView(signal: AbortSignal): Promise<void> {
  const evals = await getJson<{ evals: { name: string }[] }>("/api/evals", signal);
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
  // Score and cost are computed from a run's attempts, one detail request per run: asked again
  // only when the run's listing changed (status, progress), and for a running run at most every
  // 5 s (its progress comes from the listing meanwhile), not on every poll.
  const cache = new Map<string, { version: string; at: number; detail: RunDetail }>();
  const detailOf = async (run: RunSummary): Promise<RunDetail> => {
    const version = [run.status, run.updatedAt, run.counts.done, run.counts.errored].join("|");
    const hit = cache.get(run.id);
    const fresh =
      hit && (hit.version === version || (run.status === "running" && Date.now() - hit.at < 5_000));
    if (hit && fresh)
      return { ...hit.detail, status: run.status, counts: run.counts, owner: run.owner };
    const detail = await getJson<RunDetail>(`/api/runs/${encodeURIComponent(run.id)}`, signal);
    cache.set(run.id, { version, at: Date.now(), detail });
    return detail;
  };
  for (;;) {
    const { runs } = await getJson<{ runs: RunSummary[] }>("/api/runs?limit=50", signal);
    const details = await Promise.all(runs.map(detailOf));
    fill(
      table,
      details.length === 0 && h("tr", {}, h("td", { colspan: 7 }, "No runs yet.")),
      details.map((run) =>
        h(
          "tr",
          { "data-run": run.id },
          h("td", {}, link(runHref(run.id), run.id)),
          h("td", {}, link(`#/benchmarks/${encodeURIComponent(run.evalName)}`, run.evalName)),
          h("td", {}, badge(run.status)),
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
          h("td", {}, dollars(run.cost.spent.costUsd)),
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
    for await (const e of sse(
      "/api/runs",
      { method: "POST", body: { eval: evalName } },
      stop.signal,
    )) {
      if (e.event === "started") {
        location.hash = runHref((e.data as { runId: string }).runId);
        return;
      }
      if (e.event === "error") throw new Error((e.data as { message: string }).message);
    }
  } catch (error) {
    fill(notice, h("span", { class: "error" }, message(error)));
  } finally {
    stop.abort();
  }
}

// ---------------------------------------------------------------------------------------------
// One run

async function runView(runId: string, signal: AbortSignal): Promise<void> {
  const summary = h("section", { class: "summary" });
  const samples = h("section", { class: "samples" });
  const notice = h("p", { class: "notice", role: "status" });
  fill(main, h("p", {}, link("#/", "← Runs")), summary, notice, samples);

  let run = await loadRun(runId, signal);
  const filters = sampleFilters(run, () => void drawSamples());
  const page = { offset: 0 };
  const drawSamples = async () => {
    const list = await getJson<SamplePage>(
      `/api/runs/${encodeURIComponent(runId)}/samples?${filters.query(page.offset)}`,
      signal,
    );
    fill(
      samples,
      h("h2", {}, "Samples"),
      filters.form,
      samplesTable(runId, list, page, drawSamples),
    );
  };

  const draw = () =>
    fill(summary, runSummary(run, { resume: () => void resume(), cancel: () => void cancel() }));
  draw();
  await drawSamples();

  const refresh = async () => {
    run = await loadRun(runId, signal);
    draw();
    await drawSamples();
  };

  const resume = async () => {
    fill(notice, "Resuming…");
    const stream = new AbortController();
    signal.addEventListener("abort", () => stream.abort(), { once: true });
    try {
      for await (const e of sse(
        `/api/runs/${encodeURIComponent(runId)}/resume`,
        { method: "POST" },
        stream.signal,
      )) {
        if (e.event === "started") {
          const d = e.data as { preserved: number; remaining: number };
          fill(notice, `Resumed: ${d.preserved} preserved, ${d.remaining} to execute.`);
          break;
        }
      }
    } catch (error) {
      fill(notice, h("span", { class: "error" }, message(error)));
      return;
    } finally {
      // The run goes on without this request; its progress is followed from the store.
      stream.abort();
    }
    await refresh();
    void follow();
  };

  const cancel = async () => {
    try {
      await postJson(`/api/runs/${encodeURIComponent(runId)}/cancel`);
      fill(notice, "Cancelling: in-flight samples finish, then the run can be resumed.");
    } catch (error) {
      fill(notice, h("span", { class: "error" }, message(error)));
    }
  };

  /** Follows a live run's progress from the store until it ends, redrawing as it goes. */
  const follow = async () => {
    let last = 0;
    for await (const e of sse(`/api/runs/${encodeURIComponent(runId)}/events`, {}, signal)) {
      if (e.event === "progress") {
        run = { ...run, counts: { ...run.counts, ...(e.data as Partial<RunDetail["counts"]>) } };
        draw();
        if (Date.now() - last > 2_000) {
          last = Date.now();
          await refresh();
        }
      } else if (e.event === "completed") {
        await refresh();
        return;
      }
    }
  };
  if (run.status === "running" && run.owner?.alive) await follow();
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

function loadRun(runId: string, signal: AbortSignal): Promise<RunDetail> {
  return getJson<RunDetail>(`/api/runs/${encodeURIComponent(runId)}`, signal);
}

function runSummary(run: RunDetail, actions: { resume: () => void; cancel: () => void }): Child[] {
  const { counts } = run;
  const live = run.status === "running" && !!run.owner?.alive;
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
    ),
    run.owner &&
      h(
        "p",
        { class: "meta" },
        `Owner: pid ${run.owner.pid} on ${run.owner.host} (${run.owner.alive ? "alive" : "dead"}: ${run.owner.reason})`,
      ),
    h(
      "div",
      { class: "actions" },
      resumable &&
        h(
          "button",
          { class: "resume", onclick: actions.resume },
          `Resume (${counts.remaining} left)`,
        ),
      live && h("button", { class: "cancel", onclick: actions.cancel }, "Cancel"),
      h(
        "button",
        { class: "resultset", onclick: () => void downloadResultSet(run.id) },
        "ResultSet",
      ),
    ),
    h(
      "div",
      { class: "progress" },
      bar(counts.done, counts.errored, counts.total),
      h(
        "span",
        { class: "counts" },
        `${counts.done}/${counts.total} done · ${counts.errored} errored · ${counts.remaining} remaining`,
      ),
    ),
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
    h(
      "p",
      { class: "meta" },
      `Cost ${dollars(run.cost.spent.costUsd)} spent · ${dollars(run.cost.reused.costUsd)} reused · `,
      `${run.cost.spent.inputTokens} in / ${run.cost.spent.outputTokens} out tokens`,
    ),
    Object.keys(run.errorsByType).length > 0 &&
      h(
        "p",
        { class: "meta" },
        "Errors: ",
        Object.entries(run.errorsByType)
          .map(([type, n]) => `${type} ${n}`)
          .join(" · "),
      ),
  ];
}

function sampleFilters(run: RunDetail, onChange: () => void) {
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
    { name: "status" },
    ["", "any status"],
    ["scored", "scored"],
    ["error", "error"],
    ["pending", "pending"],
  );
  const result = control(
    "select",
    { name: "result" },
    ["", "any result"],
    ["pass", "pass"],
    ["fail", "fail"],
  );
  const scorer = control(
    "select",
    { name: "scorer" },
    ["", "any scorer"],
    ...run.config.scorers.map((s): [string, string] => [s, s]),
  );
  const search = h("input", {
    name: "search",
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

function samplesTable(
  runId: string,
  list: SamplePage,
  page: { offset: number },
  redraw: () => Promise<void>,
): Child[] {
  const move = (offset: number) => () => {
    page.offset = offset;
    void redraw();
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
          ["Sample", "Epoch", "Status", "Scores", "Output", "Attempts"].map((c) => h("th", {}, c)),
        ),
      ),
      h(
        "tbody",
        {},
        list.samples.length === 0 && h("tr", {}, h("td", { colspan: 6 }, "No samples match.")),
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
            h("td", {}, s.outcome ? scoresText(s.outcome) : "—"),
            h("td", { class: "output" }, s.outcome ? outputText(s.outcome) : ""),
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

function scoresText(attempt: AttemptView): string {
  return attempt.scores.map((s) => `${s.scorer} ${score(s.value)}`).join(", ");
}

function outputText(attempt: AttemptView): string {
  return attempt.status === "error" && attempt.error
    ? `${attempt.error.type}: ${preview(attempt.error.message)}`
    : preview(attempt.output);
}

// ---------------------------------------------------------------------------------------------
// One sample

async function sampleView(runId: string, sampleId: string, signal: AbortSignal): Promise<void> {
  const detail = await getJson<SampleDetail>(
    `/api/runs/${encodeURIComponent(runId)}/samples/${encodeURIComponent(sampleId)}`,
    signal,
  );
  const { sample } = detail;
  fill(
    main,
    h("p", {}, link(runHref(runId), `← ${runId}`)),
    h("h1", {}, sample.id),
    h("h2", {}, "Input"),
    h("pre", { class: "input" }, full(sample.input)),
    sample.target !== undefined && [
      h("h2", {}, "Target"),
      h("pre", { class: "target" }, full(sample.target)),
    ],
    sample.metadata !== undefined && [h("h2", {}, "Metadata"), h("pre", {}, full(sample.metadata))],
    h("h2", {}, "Attempts"),
    detail.attempts.length === 0 && h("p", { class: "muted" }, "Not executed yet."),
    detail.attempts.map((a) => attemptCard(a, detail)),
  );
}

function attemptCard(a: AttemptView, detail: SampleDetail): HTMLElement {
  const outcome = detail.epochs.find((e) => e.epoch === a.epoch)?.outcomeAttempt === a.attempt;
  return h(
    "article",
    { class: `attempt ${a.status}`, "data-attempt": a.attempt },
    h(
      "h3",
      {},
      `Epoch ${a.epoch} · attempt ${a.attempt} `,
      badge(a.status),
      outcome && h("span", { class: "tag" }, "outcome"),
      a.stale && h("span", { class: "tag" }, "earlier version of the sample"),
      a.provenance.kind === "imported" &&
        h("span", { class: "tag" }, `imported from ${a.provenance.source ?? "?"}`),
    ),
    h(
      "p",
      { class: "meta" },
      `${when(a.startedAt)} · ${a.durationMs} ms`,
      a.usage &&
        ` · ${a.usage.inputTokens} in / ${a.usage.outputTokens} out tokens · ${dollars(a.usage.costUsd)}`,
    ),
    a.error && h("p", { class: "error" }, `${a.error.type}: ${a.error.message}`),
    a.scores.length > 0 &&
      h(
        "ul",
        { class: "scores" },
        a.scores.map((s) =>
          h(
            "li",
            {},
            `${s.scorer}: ${score(s.value)}`,
            s.answer !== undefined && ` (answer ${s.answer})`,
            s.explanation && h("div", { class: "explanation" }, s.explanation),
          ),
        ),
      ),
    a.status === "scored" && [h("h4", {}, "Output"), h("pre", { class: "output" }, full(a.output))],
    a.transcript !== null && a.transcript !== undefined && transcript(a.transcript),
  );
}

function transcript(value: unknown): HTMLElement {
  const messages = Array.isArray(value) ? value : null;
  return h(
    "details",
    { class: "transcript" },
    h("summary", {}, "Transcript"),
    messages
      ? messages.map((m: { role?: unknown; content?: unknown }) =>
          h(
            "div",
            { class: "message" },
            h("strong", {}, String(m.role ?? "?")),
            h("pre", {}, full(m.content)),
          ),
        )
      : h("pre", {}, full(value)),
  );
}

// ---------------------------------------------------------------------------------------------
// A benchmark: the runs of one eval side by side

async function benchmarkView(name: string, signal: AbortSignal): Promise<void> {
  const b = await getJson<BenchmarkView>(
    `/api/benchmarks/${encodeURIComponent(name)}?limit=100`,
    signal,
  );
  const scorer = b.scorers[0];
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
            h("td", {}, dollars(r.cost.spent.costUsd)),
          ),
        ),
      ),
    ),
    scorer && [
      h("h2", {}, `Per sample (${scorer})`),
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
    ],
  );
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

window.addEventListener("hashchange", route);
route();
