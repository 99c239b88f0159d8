/**
 * How far a human scorer and another scorer agree on the keys both scored: the agreement rate,
 * Cohen's κ with its 95% confidence interval, and the confusion matrix. Values are categories as
 * they are (pass 1 and fail 0, or each distinct score): κ is unweighted.
 */
export interface Agreement {
  /** The human scorer (`human`, `human:<rubric>`). */
  human: string;
  /** The scorer compared with it. */
  scorer: string;
  /** Keys both scored. */
  n: number;
  /** Share of those keys where both gave the same value; null with no key. */
  rate: number | null;
  /** Cohen's κ; null with no key, or when chance agreement is 1 (every value one category). */
  kappa: number | null;
  /**
   * κ ± 1.96 × its large-sample standard error (Fleiss, Cohen & Everitt 1969), clipped to
   * [−1, 1]; null when κ is, or with fewer than 2 keys.
   */
  interval: { low: number; high: number; stderr: number } | null;
  /** The categories, ascending: the matrix's rows and columns. */
  categories: number[];
  /** `matrix[i][j]`: keys the human put in `categories[i]` and the scorer in `categories[j]`. */
  matrix: number[][];
}

const Z95 = 1.959963984540054;

/**
 * Agreement of two scorers over paired values (one pair per key both scored).
 *
 * @example agreement("human", "judge", [[1, 1], [0, 1], [0, 0]]).rate // 2/3
 */
export function agreement(
  human: string,
  scorer: string,
  pairs: readonly (readonly [number, number])[],
): Agreement {
  const categories = [...new Set(pairs.flat())].sort((a, b) => a - b);
  const index = new Map(categories.map((c, i) => [c, i]));
  const matrix = categories.map(() => categories.map(() => 0));
  for (const [h, s] of pairs) matrix[index.get(h)!]![index.get(s)!]! += 1;
  const n = pairs.length;
  const base = { human, scorer, n, categories, matrix };
  if (n === 0) return { ...base, rate: null, kappa: null, interval: null };
  const p = matrix.map((row) => row.map((count) => count / n));
  const rows = p.map((row) => row.reduce((a, b) => a + b, 0));
  const cols = categories.map((_, j) => p.reduce((a, row) => a + row[j]!, 0));
  const po = categories.reduce((a, _, i) => a + p[i]![i]!, 0);
  const pe = categories.reduce((a, _, i) => a + rows[i]! * cols[i]!, 0);
  if (pe >= 1) return { ...base, rate: po, kappa: null, interval: null };
  const kappa = (po - pe) / (1 - pe);
  return { ...base, rate: po, kappa, interval: kappaInterval(p, rows, cols, kappa, pe, n) };
}

/**
 * The large-sample standard error of κ (Fleiss, Cohen & Everitt 1969):
 * SE = √(A + B − C) / ((1 − pe) √n), with
 * A = Σᵢ pᵢᵢ (1 − (pᵢ. + p.ᵢ)(1 − κ))², B = (1 − κ)² Σᵢ≠ⱼ pᵢⱼ (p.ᵢ + pⱼ.)², C = (κ − pe(1 − κ))².
 */
function kappaInterval(
  p: readonly (readonly number[])[],
  rows: readonly number[],
  cols: readonly number[],
  kappa: number,
  pe: number,
  n: number,
): Agreement["interval"] {
  if (n < 2) return null;
  let a = 0;
  let b = 0;
  for (let i = 0; i < p.length; i++) {
    for (let j = 0; j < p.length; j++) {
      const pij = p[i]![j]!;
      if (i === j) a += pij * (1 - (rows[i]! + cols[i]!) * (1 - kappa)) ** 2;
      else b += pij * (cols[i]! + rows[j]!) ** 2;
    }
  }
  b *= (1 - kappa) ** 2;
  const c = (kappa - pe * (1 - kappa)) ** 2;
  const stderr = Math.sqrt(Math.max(0, a + b - c)) / ((1 - pe) * Math.sqrt(n));
  return {
    low: Math.max(-1, kappa - Z95 * stderr),
    high: Math.min(1, kappa + Z95 * stderr),
    stderr,
  };
}
