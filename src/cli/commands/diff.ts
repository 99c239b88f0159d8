import { diffRuns, type RunDiff } from "../../runs/diff-runs.js";
import { isStetError, StetError } from "../../core/errors.js";
import { EXIT } from "../exit-codes.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { table } from "../render/format.js";

/** How many regressed sample ids the text output lists per scorer (`--json` lists all). */
const REGRESSED_SHOWN = 10;

/**
 * `stet diff <run-a> <run-b>`: the paired comparison of two runs per common scorer (B against
 * A). With `--fail-on-regression`, exit 4 when a scorer regressed significantly (p < 0.05).
 */
export async function diffCommand(
  runA: string,
  runB: string,
  flags: {
    store?: string;
    json?: boolean;
    failOnRegression?: boolean;
    allowDifferentEvals?: boolean;
  },
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const store = await openStore(flags.store, { create: false });
  let diff: RunDiff;
  try {
    diff = await diffRuns(store, runA, runB, {
      allowDifferentEvals: flags.allowDifferentEvals ?? false,
    });
  } catch (error) {
    if (isStetError(error, "E_DIFFERENT_EVALS"))
      throw new StetError(
        error.code,
        `${error.message}; pass --allow-different-evals to compare them anyway`,
      );
    throw error;
  } finally {
    await store.close();
  }
  if (flags.json) io.stdout.write(`${JSON.stringify(diff, null, 2)}\n`);
  else io.say(renderDiff(diff));
  const regressed = diff.scorers.filter((s) => s.significantRegression);
  if (flags.failOnRegression && regressed.length > 0) {
    io.stderr.write(
      `significant regression (p < 0.05) on ${regressed.map((s) => s.scorer).join(", ")}\n`,
    );
    return EXIT.belowThreshold;
  }
  return EXIT.ok;
}

/** The comparison as the terminal shows it: one row per scorer, then the regressed samples. */
export function renderDiff(diff: RunDiff): string {
  const num = (v: number | null, digits = 3) => (v === null ? "—" : v.toFixed(digits));
  const signed = (v: number | null) => (v === null ? "—" : `${v > 0 ? "+" : ""}${v.toFixed(3)}`);
  const p = (v: number) => (v < 0.0001 ? v.toExponential(2) : v.toFixed(4));
  const lines = [`diff ${diff.runA} → ${diff.runB}`];
  if (diff.evalA !== diff.evalB)
    lines.push(`different evals: "${diff.evalA}" and "${diff.evalB}" (sample ids may not pair)`);
  if (diff.scorers.length === 0) lines.push("no scorer common to both runs");
  else
    lines.push(
      table(
        [
          ["scorer", "n", "mean A", "mean B", "delta", "95% CI", "p", "test", "+", "−", "="],
          ...diff.scorers.map((s) => [
            s.scorer,
            String(s.paired),
            num(s.meanA),
            num(s.meanB),
            signed(s.delta),
            s.ciLow === null ? "—" : `[${signed(s.ciLow)}, ${signed(s.ciHigh)}]`,
            // No pair, no test: a p-value of an empty comparison would read as evidence.
            s.paired === 0 ? "—" : `${p(s.pValue)}${s.significantRegression ? " *" : ""}`,
            s.paired === 0 ? "—" : s.test,
            String(s.improved),
            String(s.regressed),
            String(s.unchanged),
          ]),
        ],
        [false, true, true, true, true, false, true, false, true, true, true],
      ),
    );
  for (const s of diff.scorers) {
    if (s.regressedIds.length === 0) continue;
    const shown = s.regressedIds.slice(0, REGRESSED_SHOWN).join(", ");
    const more = s.regressedIds.length - REGRESSED_SHOWN;
    lines.push(
      `regressed (${s.scorer}): ${shown}${more > 0 ? ` … and ${more} more (--json)` : ""}`,
    );
  }
  const only = (label: string, ids: string[]) =>
    ids.length > 0 &&
    lines.push(
      `${label}: ${ids.length} (${ids.slice(0, REGRESSED_SHOWN).join(", ")}${ids.length > REGRESSED_SHOWN ? ", …" : ""})`,
    );
  only(`only in ${diff.runA}`, diff.onlyInA);
  only(`only in ${diff.runB}`, diff.onlyInB);
  only("changed content (not paired)", diff.changed);
  if (diff.scorers.some((s) => s.unpaired > 0))
    lines.push(
      `unpaired (no value in one run): ${diff.scorers.map((s) => `${s.scorer} ${s.unpaired}`).join(", ")}`,
    );
  return lines.join("\n");
}
