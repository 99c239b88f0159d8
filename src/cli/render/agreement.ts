import type { Agreement } from "../../core/agreement.js";

/**
 * How far each human scorer agrees with each judged scorer: one line per pair (keys, rate,
 * Cohen's κ with its 95% interval) and its confusion matrix (human rows, scorer columns).
 *
 * @example renderAgreement([a]) // ["agreement human vs exact: 20 keys · 90.0% agree · κ 0.687 (95% 0.321 to 1.000)", …]
 */
export function renderAgreement(agreements: readonly Agreement[]): string[] {
  return agreements.flatMap((a, i) => {
    const head = `${i === 0 ? "agreement" : "         "} ${a.human} vs ${a.scorer}: ${a.n} key${a.n === 1 ? "" : "s"}`;
    if (a.n === 0) return [`${head} reviewed and scored by both`];
    const rate = `${((a.rate ?? 0) * 100).toFixed(1)}% agree`;
    const kappa =
      a.kappa === null
        ? "κ undefined (one value only)"
        : `κ ${a.kappa.toFixed(3)}` +
          (a.interval
            ? ` (95% ${a.interval.low.toFixed(3)} to ${a.interval.high.toFixed(3)})`
            : "");
    const width = Math.max(...a.categories.map((c) => String(c).length), 5);
    const cell = (s: string) => s.padStart(width);
    const matrix = [
      `           ${cell(a.human)} \\ ${a.scorer}: ${a.categories.map((c) => cell(String(c))).join(" ")}`,
      ...a.categories.map(
        (c, r) =>
          `           ${cell(String(c))}   ${a.matrix[r]!.map((n) => cell(String(n))).join(" ")}`,
      ),
    ];
    return [`${head} · ${rate} · ${kappa}`, ...matrix];
  });
}
