/** One sample of a run: its input, target and metadata, and every attempt made at it. */
import { getJson } from "./api.js";
import { badge, dollars, fill, full, h, score, tokens, when } from "./dom.js";
import { link, runHref } from "./shared.js";
import type {
  AttemptView,
  JournalStepView,
  SampleDetailView,
  ScoringView,
} from "../api/contract.js";

export async function sampleView(
  main: HTMLElement,
  runId: string,
  sampleId: string,
  signal: AbortSignal,
): Promise<void> {
  const detail = await getJson<SampleDetailView>(
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

function attemptCard(a: AttemptView, detail: SampleDetailView): HTMLElement {
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
      a.limit &&
        h(
          "span",
          { class: "tag limit", title: "a per-sample limit ended it: scored on its output so far" },
          `limit: ${a.limit.limit} ${a.limit.value} (used ${a.limit.used})`,
        ),
      a.stale && h("span", { class: "tag" }, "earlier version of the sample"),
      a.provenance.kind === "imported" &&
        h("span", { class: "tag" }, `imported from ${a.provenance.source ?? "?"}`),
      a.redacted &&
        h(
          "span",
          { class: "tag", title: "replaced with [redacted] before the attempt was stored" },
          `redacted: ${a.redacted.join(", ")}`,
        ),
    ),
    h(
      "p",
      { class: "meta" },
      `${when(a.startedAt)} · ${a.durationMs} ms`,
      a.retries !== undefined && ` · ${a.retries} ${a.retries === 1 ? "retry" : "retries"}`,
      a.usage &&
        ` · ${tokens(a.usage)} · ${a.usage.costUsd === undefined ? "cost unknown" : dollars(a.usage.costUsd)}` +
          (a.usage.reused
            ? ` · of which replayed from the journal: ${tokens(a.usage.reused)}, ${a.usage.reused.costUsd === undefined ? "cost unknown" : dollars(a.usage.reused.costUsd)}`
            : ""),
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
    a.scorings && a.scorings.length > 0 && scoringsList(a.scorings),
    (a.status === "scored" || a.error?.type === "scorer") && [
      h("h4", {}, "Output"),
      h("pre", { class: "output" }, full(a.output)),
    ],
    a.transcript !== null && a.transcript !== undefined && transcript(a.transcript),
    a.journal !== undefined && a.journal.length > 0 && trajectory(a.journal),
  );
}

/** The attempt's step journal: each model call and tool step, in order. */
function trajectory(steps: JournalStepView[]): HTMLElement {
  return h(
    "details",
    { class: "trajectory", open: true },
    h("summary", {}, `Trajectory · ${steps.length} steps`),
    h(
      "ol",
      { class: "steps", start: 0 },
      steps.map((s) =>
        h(
          "li",
          { class: `step ${s.kind}`, "data-step": s.step },
          h("strong", {}, s.kind === "chat" ? "model call" : s.name),
          ` · ${s.durationMs} ms`,
          s.usage && ` · ${tokens(s.usage)}`,
          s.kind === "step" && h("pre", { class: "step-input" }, full(s.input)),
          s.error
            ? h("p", { class: "error" }, `threw: ${s.error.message}`)
            : h(
                "pre",
                { class: "step-result" },
                full(
                  s.kind === "chat"
                    ? (s.result as { content?: unknown } | null)?.content
                    : s.result,
                ),
              ),
        ),
      ),
    ),
  );
}

/** The attempt's later scorings: each with the scorers it ran and the scores it gave. */
function scoringsList(scorings: ScoringView[]): HTMLElement {
  return h(
    "details",
    { class: "scorings" },
    h("summary", {}, `Rescored ${scorings.length}× (the output was not produced again)`),
    h(
      "ol",
      {},
      scorings.map((s) =>
        h(
          "li",
          { "data-scoring": s.scoring },
          `${when(s.scoredAt)} · ran ${s.rescored.join(", ")} · `,
          s.retries ? `${s.retries} ${s.retries === 1 ? "retry" : "retries"} · ` : "",
          s.status === "scored"
            ? s.scores.map((v) => `${v.scorer}: ${score(v.value)}`).join(", ")
            : h("span", { class: "error" }, `${s.error?.type}: ${s.error?.message}`),
        ),
      ),
    ),
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
