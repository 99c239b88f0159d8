/**
 * Exact sums of doubles. Every finite double is a dyadic rational (an integer times a power of
 * two), so a sum of them is one too, held here as a BigInt `value × 2^shift` with no rounding at
 * all: adding the same numbers in any order, or adding some and subtracting them again, gives the
 * same sum, and `toNumber` rounds it once, to nearest (ties to even). That is what lets a run's
 * metrics and spend be kept up to date one commit at a time (a per-run aggregate) and still equal
 * a recomputation over every outcome bit for bit: floating-point addition is not associative, so
 * a running float total would depend on the order the samples finished in.
 *
 * @example new ExactSum().add(0.1).add(0.2).add(-0.1).toNumber() // 0.2 (floats give 0.20000000000000004)
 */
export class ExactSum {
  #value: bigint;
  #shift: number;

  constructor(value = 0n, shift = 0) {
    this.#value = value;
    this.#shift = shift;
  }

  /** Adds a finite double (NaN and infinities have no exact value: refused). */
  add(x: number): this {
    if (x === 0) return this;
    if (Number.isSafeInteger(x)) return this.#addDyadic(BigInt(x), 0);
    const [m, e] = dyadic(x);
    return this.#addDyadic(m, e);
  }

  /** Subtracts a finite double: `add(x).subtract(x)` leaves the sum as it was. */
  subtract(x: number): this {
    return this.add(-x);
  }

  /** Adds the square of a finite double, exactly (x² needs up to 106 bits: no double holds it). */
  addSquare(x: number, sign: 1 | -1 = 1): this {
    if (x === 0) return this;
    const [m, e] = dyadic(x);
    return this.#addDyadic(BigInt(sign) * m * m, 2 * e);
  }

  /** Adds (or, with sign -1, subtracts) another exact sum. */
  addSum(other: ExactSum, sign: 1 | -1 = 1): this {
    return this.#addDyadic(BigInt(sign) * other.#value, other.#shift);
  }

  /** Adds `factor × other`, exactly, for a finite double `factor`. */
  addScaled(other: ExactSum, factor: number): this {
    if (factor === 0 || other.#value === 0n) return this;
    const [m, e] = dyadic(factor);
    return this.#addDyadic(m * other.#value, e + other.#shift);
  }

  isZero(): boolean {
    return this.#value === 0n;
  }

  /** The sum rounded once to the nearest double (ties to even), as IEEE 754 addition rounds. */
  toNumber(): number {
    return roundDyadic(this.#value, this.#shift);
  }

  /** A copy that changes independently. */
  clone(): ExactSum {
    return new ExactSum(this.#value, this.#shift);
  }

  /** A compact exact text form (`value` in hex, `p` and the power of two), read by `parse`. */
  toString(): string {
    return this.#value === 0n ? "0" : `${this.#value.toString(16)}p${this.#shift}`;
  }

  toJSON(): string {
    return this.toString();
  }

  /**
   * An exact sum from its text form (`toString`).
   *
   * @example ExactSum.parse(new ExactSum().add(0.5).toString()).toNumber() // 0.5
   */
  static parse(text: string): ExactSum {
    if (text === "0") return new ExactSum();
    const match = /^(-?)([0-9a-f]+)p(-?\d+)$/.exec(text);
    if (!match) throw new Error(`not an exact sum: ${JSON.stringify(text)}`);
    const magnitude = BigInt(`0x${match[2]!}`);
    return new ExactSum(match[1] === "-" ? -magnitude : magnitude, Number(match[3]));
  }

  /** Whether two sums are the same number (whatever their representation). */
  equals(other: ExactSum): boolean {
    return this.clone().addSum(other, -1).isZero();
  }

  #addDyadic(m: bigint, e: number): this {
    if (m === 0n) return this;
    if (this.#value === 0n) {
      this.#value = m;
      this.#shift = e;
    } else if (e >= this.#shift) {
      this.#value += m << BigInt(e - this.#shift);
    } else {
      this.#value = (this.#value << BigInt(this.#shift - e)) + m;
      this.#shift = e;
    }
    return this;
  }
}

const view = new DataView(new ArrayBuffer(8));

/** A finite double as `m × 2^e` (m a BigInt with its sign, e an integer). */
function dyadic(x: number): [bigint, number] {
  if (!Number.isFinite(x)) throw new Error(`an exact sum takes finite numbers, not ${x}`);
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  const fraction = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  const m = biased === 0 ? fraction : fraction | (1n << 52n);
  const e = biased === 0 ? -1074 : biased - 1075;
  return [x < 0 ? -m : m, e];
}

/** `value × 2^shift` rounded to the nearest double, ties to even, subnormals included. */
function roundDyadic(value: bigint, shift: number): number {
  if (value === 0n) return 0;
  const negative = value < 0n;
  let magnitude = negative ? -value : value;
  const bits = magnitude.toString(2).length;
  // The leading bit's exponent decides the precision: 53 bits, fewer below 2^-1022.
  const lead = shift + bits - 1;
  const precision = lead >= -1022 ? 53 : Math.max(0, 53 - (-1022 - lead));
  let exponent = shift;
  const drop = bits - precision;
  if (drop > 0) {
    const d = BigInt(drop);
    const kept = magnitude >> d;
    const rest = magnitude - (kept << d);
    const half = 1n << (d - 1n);
    magnitude = rest > half || (rest === half && (kept & 1n) === 1n) ? kept + 1n : kept;
    exponent += drop;
  }
  return (negative ? -1 : 1) * scale(Number(magnitude), exponent);
}

/** x × 2^k, in steps that stay exact while the result is representable. */
function scale(x: number, k: number): number {
  let out = x;
  let rest = k;
  while (rest > 1000) {
    out *= 2 ** 1000;
    rest -= 1000;
  }
  while (rest < -1000) {
    out *= 2 ** -1000;
    rest += 1000;
  }
  return out * 2 ** rest;
}
