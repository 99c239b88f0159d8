import { h } from "./dom.js";

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
