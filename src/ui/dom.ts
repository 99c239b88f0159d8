/** DOM building without innerHTML: every value from the API becomes a text node, never markup. */

import { formatUsd } from "../core/money.js";

export type Child = Node | string | number | null | undefined | false | readonly Child[];
type Attrs = Record<string, string | number | boolean | EventListener | null | undefined>;

/**
 * Creates an element. Attributes starting with `on` are listeners; `false`/`null` ones are left
 * out; children may be nested arrays, and falsy children are skipped.
 *
 * @example h("a", { href: "#/runs/r_1", class: "run" }, "r_1")
 */
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** A JSON value as short text: strings as they are, anything else as compact JSON. */
export function preview(value: unknown, max = 120): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined) return "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A JSON value in full, for <pre>: strings as they are, anything else pretty-printed. */
export function full(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export function score(value: number | null | undefined, stderr?: number | null): string {
  if (value === null || value === undefined) return "—";
  const main = value.toFixed(3);
  return stderr === null || stderr === undefined ? main : `${main} ± ${stderr.toFixed(3)}`;
}

/**
 * A cost: dollars when known; "unknown" when no price was known (never $0); "≥ $x (n unpriced)"
 * when `unpriced` attempts had no price and the figure counts only the priced ones.
 */
export function dollars(value: number | null | undefined, unpriced = 0): string {
  if (value === null || value === undefined)
    return unpriced > 0 ? `unknown (${unpriced} unpriced)` : "unknown";
  return unpriced > 0 ? `≥ ${formatUsd(value)} (${unpriced} unpriced)` : formatUsd(value);
}

/**
 * Tokens in and out, with the cached reads and cache writes of the input and the reasoning tokens
 * of the output when there were any (parts of the figures, not added to them).
 */
export function tokens(u: {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
  reasoningTokens?: number | undefined;
}): string {
  const of = (parts: (string | false)[]) => {
    const shown = parts.filter((p): p is string => p !== false);
    return shown.length > 0 ? ` (${shown.join(", ")})` : "";
  };
  const input = of([
    (u.cachedInputTokens ?? 0) > 0 && `${u.cachedInputTokens} cached`,
    (u.cacheWriteTokens ?? 0) > 0 && `${u.cacheWriteTokens} cache writes`,
  ]);
  const output = of([(u.reasoningTokens ?? 0) > 0 && `${u.reasoningTokens} reasoning`]);
  return `${u.inputTokens} in${input} / ${u.outputTokens} out${output} tokens`;
}

/** A total's cost, as `dollars`. */
export function totalCost(total: { costUsd: number | null; unpriced: number }): string {
  return dollars(total.costUsd, total.unpriced);
}

export function when(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** A progress bar: done (and errored) out of total. */
export function bar(done: number, errored: number, total: number): HTMLElement {
  // Widths go through the CSSOM: the server's Content-Security-Policy refuses style attributes.
  const part = (name: string, n: number) => {
    const span = h("span", { class: name });
    span.style.width = `${total === 0 ? 0 : Math.min(100, (n / total) * 100)}%`;
    return span;
  };
  return h(
    "div",
    { class: "bar", role: "progressbar", "aria-valuenow": done, "aria-valuemax": total },
    part("done", done),
    part("errored", errored),
  );
}

export function badge(status: string): HTMLElement {
  return h("span", { class: `badge ${status}` }, status);
}
