import { h } from "./dom.js";
import type { RunSummaryView } from "../api/contract.js";

/** An error as one line for the page. */
export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export const link = (href: string, text: string): HTMLElement => h("a", { href }, text);

export const runHref = (id: string): string => `#/runs/${encodeURIComponent(id)}`;

/** Waits `ms`, or rejects as soon as `signal` aborts (a view being left). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
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

/**
 * What a batched run waits on, for its page and the runs list: the open provider batches, their
 * requests and the oldest one's age. Empty when it waits on none.
 *
 * @example waitingOn(run.batches) // "waiting on 1 provider batch (500 requests, oldest 12m)"
 */
export function waitingOn(batches: RunSummaryView["batches"]): string {
  if (!batches || batches.waiting === 0) return "";
  const open = batches.batches.filter((b) => b.status === "recorded" || b.status === "submitted");
  const minutes = Math.floor(Math.max(0, ...open.map((b) => b.ageMs)) / 60_000);
  const age = minutes < 60 ? `${minutes}m` : `${Math.floor(minutes / 60)}h${minutes % 60}m`;
  const n = batches.waiting;
  return `waiting on ${n} provider batch${n === 1 ? "" : "es"} (${batches.waitingRequests} requests, oldest ${age})`;
}
