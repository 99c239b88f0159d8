/**
 * A run's review queue (`#/runs/:id/review/:which`): its failed, errored, scorer-disagreement or
 * random samples one at a time, with input, target, output, transcript and the scorers'
 * verdicts, reviewed with the keyboard: p pass, f fail, 0–9 a score, n a note, j or → next,
 * k or ← previous. Each verdict is saved through the API at once (POST /api/runs/:id/reviews).
 */
import { getJson, postJson } from "./api.js";
import { badge, fill, full, h, score } from "./dom.js";
import { link, message, runHref } from "./shared.js";
import type {
  ReviewsView,
  ReviewView,
  SampleDetailView,
  SamplePageView,
  SampleRowView,
} from "../api/contract.js";

/** Which samples the queue holds. */
export const QUEUES = ["failed", "errored", "disagreement", "random"] as const;
type Queue = (typeof QUEUES)[number];

const REVIEWER_KEY = "stet.reviewer";
/** The random queue's size and seed: the same run gives the same sample, reload after reload. */
const RANDOM_SIZE = 50;

export async function reviewQueue(
  main: HTMLElement,
  runId: string,
  which: string | undefined,
  signal: AbortSignal,
): Promise<void> {
  const queue: Queue = (QUEUES as readonly string[]).includes(which ?? "")
    ? (which as Queue)
    : "failed";
  const rows = pick(await allSamples(runId, signal), queue, runId);
  let reviews = (await getJson<ReviewsView>(reviewsPath(runId), signal)).reviews;
  const reviewer = h("input", {
    name: "reviewer",
    placeholder: "your name",
    "aria-label": "Reviewer",
    value: localStorage.getItem(REVIEWER_KEY) ?? "",
    onchange: (e: Event) =>
      localStorage.setItem(REVIEWER_KEY, (e.target as HTMLInputElement).value.trim()),
  }) as HTMLInputElement;
  const note = h("textarea", {
    name: "note",
    rows: 2,
    "aria-label": "Note",
  }) as HTMLTextAreaElement;
  const status = h("p", { class: "notice", role: "status" });
  const card = h("section", { class: "review-card" });
  fill(
    main,
    h("p", {}, link(runHref(runId), `← ${runId}`)),
    h("h1", {}, `Review · ${queue}`),
    h(
      "p",
      { class: "meta" },
      QUEUES.map((q) => [link(`#/runs/${encodeURIComponent(runId)}/review/${q}`, q), " "]),
      "· keys: p pass · f fail · 0–9 score · n note · j/→ next · k/← previous",
    ),
    h("label", {}, "Reviewer ", reviewer),
    status,
    card,
  );
  if (rows.length === 0) {
    fill(card, h("p", { class: "muted" }, `No ${queue} samples to review.`));
    return;
  }
  let index = 0;
  const show = async () => {
    const row = rows[index]!;
    const detail = await getJson<SampleDetailView>(
      `/api/runs/${encodeURIComponent(runId)}/samples/${encodeURIComponent(row.sampleId)}`,
      signal,
    );
    note.value = "";
    fill(card, reviewCard(row, detail, reviews, `${index + 1} of ${rows.length}`), note);
  };
  const save = async (verdict: { verdict: "pass" | "fail" } | { value: number }) => {
    const row = rows[index]!;
    const name = reviewer.value.trim();
    if (name) localStorage.setItem(REVIEWER_KEY, name);
    const body = {
      sampleId: row.sampleId,
      epoch: row.epoch,
      ...(row.outcome ? { attempt: row.outcome.attempt } : {}),
      ...verdict,
      ...(note.value.trim() ? { note: note.value.trim() } : {}),
      ...(name ? { reviewer: name } : {}),
    };
    const saved = await postJson<ReviewsView>(reviewsPath(runId), body);
    reviews = [...reviews, ...saved.reviews];
    fill(status, `Saved ${row.sampleId} epoch ${row.epoch}.`);
    if (index < rows.length - 1) index += 1;
    await show();
  };
  const move = async (step: number) => {
    index = Math.min(rows.length - 1, Math.max(0, index + step));
    await show();
  };
  const onKey = (event: KeyboardEvent) => {
    const typing =
      event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement;
    if (typing) {
      // Escape leaves the note (or the name) for the keys again.
      if (event.key === "Escape") (event.target as HTMLElement).blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const action = keyAction(event.key);
    if (!action) return;
    event.preventDefault();
    const work =
      action === "note"
        ? Promise.resolve(note.focus())
        : action === "next" || action === "previous"
          ? move(action === "next" ? 1 : -1)
          : save(action);
    work.catch((error: unknown) => fill(status, h("span", { class: "error" }, message(error))));
  };
  document.addEventListener("keydown", onKey);
  signal.addEventListener("abort", () => document.removeEventListener("keydown", onKey), {
    once: true,
  });
  await show();
}

type Action = "note" | "next" | "previous" | { verdict: "pass" | "fail" } | { value: number };

function keyAction(key: string): Action | undefined {
  if (key === "p") return { verdict: "pass" };
  if (key === "f") return { verdict: "fail" };
  if (/^[0-9]$/.test(key)) return { value: Number(key) };
  if (key === "n") return "note";
  if (key === "j" || key === "ArrowRight") return "next";
  if (key === "k" || key === "ArrowLeft") return "previous";
  return undefined;
}

function reviewsPath(runId: string): string {
  return `/api/runs/${encodeURIComponent(runId)}/reviews`;
}

/** Every sample row of the run, page by page (the API's largest page is 500). */
async function allSamples(runId: string, signal: AbortSignal): Promise<SampleRowView[]> {
  const rows: SampleRowView[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await getJson<SamplePageView>(
      `/api/runs/${encodeURIComponent(runId)}/samples?limit=500&offset=${offset}`,
      signal,
    );
    rows.push(...page.samples);
    if (rows.length >= page.total || page.samples.length === 0) return rows;
  }
}

/** The queue's samples, in the run's order (random: a fixed shuffle seeded by the run id). */
function pick(rows: readonly SampleRowView[], queue: Queue, runId: string): SampleRowView[] {
  const values = (r: SampleRowView) =>
    (r.outcome?.scores ?? []).map((s) => s.value).filter((v): v is number => v !== null);
  switch (queue) {
    case "failed":
      return rows.filter((r) => r.status === "scored" && values(r).some((v) => v < 1));
    case "errored":
      return rows.filter((r) => r.status === "error");
    case "disagreement":
      return rows.filter((r) => new Set(values(r)).size > 1);
    case "random":
      return shuffled(
        rows.filter((r) => r.status !== "pending"),
        runId,
      ).slice(0, RANDOM_SIZE);
  }
}

function shuffled<T>(items: readonly T[], seed: string): T[] {
  let state = 2166136261;
  for (const c of seed) state = Math.imul(state ^ c.charCodeAt(0), 16777619) >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function reviewCard(
  row: SampleRowView,
  detail: SampleDetailView,
  reviews: readonly ReviewView[],
  position: string,
) {
  const attempt = detail.attempts.find(
    (a) => a.epoch === row.epoch && a.attempt === row.outcome?.attempt,
  );
  const mine = reviews.filter((r) => r.sampleId === row.sampleId && r.epoch === row.epoch);
  return [
    h(
      "h2",
      { "data-sample": row.sampleId },
      `${row.sampleId} · epoch ${row.epoch} `,
      badge(row.status),
      h("span", { class: "muted" }, ` ${position}`),
    ),
    h("h3", {}, "Input"),
    h("pre", { class: "input" }, full(detail.sample.input)),
    detail.sample.target !== undefined && [
      h("h3", {}, "Target"),
      h("pre", { class: "target" }, full(detail.sample.target)),
    ],
    h("h3", {}, "Output"),
    h("pre", { class: "output" }, attempt ? full(attempt.output) : "(none)"),
    attempt?.error && h("p", { class: "error" }, `${attempt.error.type}: ${attempt.error.message}`),
    h("h3", {}, "Scorers"),
    h(
      "ul",
      { class: "scores" },
      (attempt?.scores ?? []).map((s) =>
        h("li", {}, `${s.scorer}: ${score(s.value)}`, s.explanation && ` — ${s.explanation}`),
      ),
    ),
    attempt?.transcript !== null &&
      attempt?.transcript !== undefined &&
      h("details", {}, h("summary", {}, "Transcript"), h("pre", {}, full(attempt.transcript))),
    h("h3", {}, "Reviews"),
    mine.length === 0
      ? h("p", { class: "muted reviews" }, "None yet.")
      : h(
          "ul",
          { class: "reviews" },
          mine.map((r) =>
            h(
              "li",
              { class: r.current ? "current" : "superseded" },
              `${r.scorer} by ${r.reviewer}: ${r.value === 1 ? "pass" : r.value === 0 ? "fail" : r.value}`,
              r.note && ` — ${r.note}`,
              !r.current && " (superseded)",
            ),
          ),
        ),
    h("h3", {}, "Note (n; Esc to leave it)"),
  ];
}
