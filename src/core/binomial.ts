/**
 * Exact binomial draws from a seeded uniform source, in time that grows with the standard
 * deviation (√(npq)), not with n: what lets a bootstrap or a sign-flip test resample a million
 * pairs by the counts of their distinct values instead of one draw per pair.
 */

/** Up to this n, `logFactorial` sums logarithms (a table); above, Stirling's series. */
const TABLE_SIZE = 256;
const LOG_FACTORIALS = (() => {
  const table = new Float64Array(TABLE_SIZE);
  for (let i = 2; i < TABLE_SIZE; i++) table[i] = table[i - 1]! + Math.log(i);
  return table;
})();
const HALF_LOG_2PI = 0.5 * Math.log(2 * Math.PI);

/**
 * ln(n!) for a non-negative integer n (relative error below 1e-15 of the result).
 *
 * @example Math.exp(logFactorial(5)) // ≈ 120
 */
export function logFactorial(n: number): number {
  if (n < TABLE_SIZE) return LOG_FACTORIALS[n]!;
  // Stirling's series to its 1/n³ term: the next term is below 1e-15 for n ≥ 256.
  const inv = 1 / n;
  return (n + 0.5) * Math.log(n) - n + HALF_LOG_2PI + inv / 12 - (inv * inv * inv) / 360;
}

/**
 * A draw of Binomial(n, p) by inversion of `random()` outward from the mode (the mode, then
 * mode + 1, mode − 1, mode + 2, …): exact up to floating point, one uniform per draw, expected
 * steps of the order of √(np(1 − p)).
 *
 * @example binomial(10, 0.5, mulberry32(1)) // an integer in [0, 10]
 */
export function binomial(n: number, p: number, random: () => number): number {
  if (n <= 0 || p <= 0) return 0;
  if (p >= 1) return n;
  const q = 1 - p;
  const mode = Math.min(n, Math.floor((n + 1) * p));
  let u = random();
  let fhi = Math.exp(
    logFactorial(n) -
      logFactorial(mode) -
      logFactorial(n - mode) +
      mode * Math.log(p) +
      (n - mode) * Math.log1p(-p),
  );
  if (u < fhi) return mode;
  u -= fhi;
  const ratio = p / q;
  let flo = fhi;
  let hi = mode;
  let lo = mode;
  while (hi < n || lo > 0) {
    if (hi < n) {
      fhi *= ((n - hi) / (hi + 1)) * ratio;
      hi++;
      if (u < fhi) return hi;
      u -= fhi;
    }
    if (lo > 0) {
      flo *= lo / (n - lo + 1) / ratio;
      lo--;
      if (u < flo) return lo;
      u -= flo;
    }
    // Both tails underflowed: rounding left u above the mass summed (about 1e-12 of draws).
    if (fhi === 0 && flo === 0) break;
  }
  return mode;
}

/**
 * Counts drawn from a multinomial: `draws` picks among categories weighted by `weights`
 * (non-negative integers), by one binomial per category on what is left. Writes into `out`.
 *
 * @example multinomial(10, [5, 5], mulberry32(1), new Float64Array(2)) // e.g. [4, 6]
 */
export function multinomial(
  draws: number,
  weights: ArrayLike<number>,
  random: () => number,
  out: Float64Array,
): Float64Array {
  let left = draws;
  let weightLeft = 0;
  for (let i = 0; i < weights.length; i++) weightLeft += weights[i]!;
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i]!;
    const c = i === weights.length - 1 ? left : binomial(left, w / weightLeft, random);
    out[i] = c;
    left -= c;
    weightLeft -= w;
  }
  return out;
}
