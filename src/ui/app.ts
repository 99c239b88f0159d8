/**
 * stet's web UI, served by `stet serve` at `/`: runs, a run's detail with live
 * progress, Resume and Cancel, its samples with filters, a sample's attempt history, and the runs
 * of a benchmark side by side. Everything comes from the HTTP API; routes live in the URL hash.
 */
import { ApiFailure, setToken } from "./api.js";
import { benchmarkView } from "./benchmark-view.js";
import { fill, h } from "./dom.js";
import { reviewQueue } from "./review-queue.js";
import { runView } from "./run-view.js";
import { runsView } from "./runs-view.js";
import { sampleView } from "./sample-view.js";
import { message } from "./shared.js";

const main = document.getElementById("main")!;
let leave: (() => void) | undefined;

/** A view draws into `main` until `signal` aborts (the user went elsewhere). */
type View = (signal: AbortSignal) => Promise<void>;

function route(): void {
  leave?.();
  const stop = new AbortController();
  leave = () => stop.abort();
  const [page, id, sub, subId] = location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .map(decodeURIComponent);
  const view: View =
    page === "runs" && id && sub === "samples" && subId
      ? (s) => sampleView(main, id, subId, s)
      : page === "runs" && id && sub === "review"
        ? (s) => reviewQueue(main, id, subId, s)
        : page === "runs" && id
          ? (s) => runView(main, id, s)
          : page === "benchmarks" && id
            ? (s) => benchmarkView(main, id, s)
            : (s) => runsView(main, s);
  fill(main, h("p", { class: "muted" }, "Loading…"));
  view(stop.signal).catch((error: unknown) => {
    if (stop.signal.aborted) return;
    showError(error);
  });
}

function showError(error: unknown): void {
  if (error instanceof ApiFailure && error.status === 401) {
    const input = h("input", {
      type: "password",
      name: "token",
      placeholder: "STET_TOKEN",
      "aria-label": "Token",
    });
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

window.addEventListener("hashchange", route);
route();
