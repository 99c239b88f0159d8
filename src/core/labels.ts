import * as z from "zod";
import { StetError } from "./errors.js";

/** A run's labels: `key=value` tags (branch, commit, anything a team names), keys sorted. */
export type RunLabels = Record<string, string>;

/** A key: a letter or digit first, then letters, digits, `_ . - / :`; 1 to 64 characters. */
const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$/;
/** A value's longest length: a branch name or a URL fits, a document does not. */
export const LABEL_VALUE_MAX = 512;
/** How many labels one run may carry. */
export const LABELS_MAX = 64;

/** Labels as a store column or an API body holds them (checked with the rules of `checkLabels`). */
export const runLabelsSchema = z.record(z.string(), z.string());

/**
 * One `key=value` (a `--label`, a `?label=` or a baseline selector's part) as its key and value.
 * Throws `E_USAGE` naming `where` and the problem: no `=`, a key of other characters, a value
 * too long or with a control character.
 *
 * @example parseLabel("branch=main", "--label") // ["branch", "main"]
 */
export function parseLabel(text: string, where: string): [string, string] {
  const at = text.indexOf("=");
  if (at < 0)
    throw new StetError("E_USAGE", `${where} ${JSON.stringify(text)}: write it as key=value`);
  const key = text.slice(0, at);
  const value = text.slice(at + 1);
  checkLabel(key, value, where);
  return [key, value];
}

/**
 * `key=value` items (each may hold several separated by commas: `branch=main,ci=true`) as labels.
 * A key given twice with two values is refused (`E_USAGE`): a run has one value per key.
 *
 * @example parseLabels(["branch=main", "os=linux,ci=true"], "--label") // { branch: "main", ci: "true", os: "linux" }
 */
export function parseLabels(items: readonly string[], where: string): RunLabels {
  const labels = new Map<string, string>();
  for (const item of items) {
    for (const part of item.split(",")) {
      const [key, value] = parseLabel(part, where);
      const before = labels.get(key);
      if (before !== undefined && before !== value)
        throw new StetError(
          "E_USAGE",
          `${where}: ${key} is given twice (${JSON.stringify(before)} and ${JSON.stringify(value)})`,
        );
      labels.set(key, value);
    }
  }
  return sortedLabels(Object.fromEntries(labels));
}

/**
 * Refuses (`E_USAGE`, naming `where`) labels that break the rules: see `parseLabel`, and at
 * most `LABELS_MAX` of them. Returns them with their keys sorted (the form stored).
 *
 * @example checkLabels({ branch: "main" }, "labels") // { branch: "main" }
 */
export function checkLabels(labels: RunLabels, where: string): RunLabels {
  const entries = Object.entries(labels);
  if (entries.length > LABELS_MAX)
    throw new StetError("E_USAGE", `${where}: ${entries.length} labels, at most ${LABELS_MAX}`);
  for (const [key, value] of entries) checkLabel(key, value, where);
  return sortedLabels(labels);
}

function checkLabel(key: string, value: string, where: string): void {
  if (!LABEL_KEY.test(key))
    throw new StetError(
      "E_USAGE",
      `${where}: label key ${JSON.stringify(key)} must be 1 to 64 letters, digits, "_", ".", ":", "/" or "-", starting with a letter or digit`,
    );
  if (value.length > LABEL_VALUE_MAX)
    throw new StetError(
      "E_USAGE",
      `${where}: the value of ${key} is ${value.length} characters, at most ${LABEL_VALUE_MAX}`,
    );
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value))
    throw new StetError("E_USAGE", `${where}: the value of ${key} holds a control character`);
}

/**
 * Labels with their keys in binary order: the one form stored and printed, so equal labels are
 * equal bytes.
 *
 * @example sortedLabels({ b: "2", a: "1" }) // { a: "1", b: "2" }
 */
export function sortedLabels(labels: RunLabels): RunLabels {
  const keys = Object.keys(labels).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, labels[k]!]));
}

/**
 * Labels as one line, `key=value` separated by spaces (`—` for none).
 *
 * @example formatLabels({ branch: "main", pr: "7" }) // "branch=main pr=7"
 */
export function formatLabels(labels: RunLabels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
  return parts.length === 0 ? "—" : parts.join(" ");
}
