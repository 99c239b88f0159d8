const RFC3339 =
  /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An RFC 3339 date-time with an offset, as EvalPort requires: the text itself when it already
 * is one (so stored timestamps export byte for byte), else its ISO form in UTC.
 *
 * @example rfc3339("2026-01-15T10:00:00.120Z") // unchanged
 * @example rfc3339("2026-01-15 10:00:00") // "2026-01-15T10:00:00.000Z" (read as local time)
 */
export function rfc3339(text: string): string {
  if (RFC3339.test(text)) return text;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new Error(`not a date-time: ${JSON.stringify(text)}`);
  return new Date(ms).toISOString();
}

/**
 * Orders two RFC 3339 date-times by the instant they name, to any fractional precision (so
 * `…:00.1234Z` and `…:00.1235Z` are different instants, and `10:00:00Z` equals
 * `11:00:00+01:00`). Negative, zero or positive.
 *
 * @example compareInstants("2026-01-01T10:00:00Z", "2026-01-01T11:00:00+01:00") // 0
 */
export function compareInstants(a: string, b: string): number {
  const x = instant(a);
  const y = instant(b);
  if (x.seconds !== y.seconds) return x.seconds - y.seconds;
  return x.fraction < y.fraction ? -1 : x.fraction > y.fraction ? 1 : 0;
}

/** The latest of some date-times (by instant), or undefined when there are none. */
export function latestInstant(times: Iterable<string | undefined>): string | undefined {
  let latest: string | undefined;
  for (const t of times) {
    if (t !== undefined && (latest === undefined || compareInstants(t, latest) > 0)) latest = t;
  }
  return latest;
}

/** The earliest of some date-times (by instant), or undefined when there are none. */
export function earliestInstant(times: Iterable<string | undefined>): string | undefined {
  let earliest: string | undefined;
  for (const t of times) {
    if (t !== undefined && (earliest === undefined || compareInstants(t, earliest) < 0)) {
      earliest = t;
    }
  }
  return earliest;
}

function instant(text: string): { seconds: number; fraction: string } {
  const m = RFC3339.exec(text);
  if (!m) {
    const ms = Date.parse(text);
    if (Number.isNaN(ms)) throw new Error(`not a date-time: ${JSON.stringify(text)}`);
    return { seconds: Math.floor(ms / 1000), fraction: String(ms % 1000).padStart(3, "0") };
  }
  const [, date, hh, mm, ss, frac = "", offset] = m;
  // A leap second (23:59:60) is the instant after 23:59:59; Date.parse refuses second 60.
  const leap = ss === "60" ? 1 : 0;
  const base = `${date}T${hh}:${mm}:${leap ? "59" : ss}${offset!.toUpperCase()}`;
  return { seconds: Date.parse(base) / 1000 + leap, fraction: frac.replace(/0+$/, "") };
}
