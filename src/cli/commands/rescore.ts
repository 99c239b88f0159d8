import type { IdentityDifference, RunConfig } from "../../core/types.js";
import { executeRescore, planRescore } from "../../runs/rescore-run.js";
import { describeDifference } from "../../runs/run-identity.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { EXIT } from "../exit-codes.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { hintLine, rescoreHint } from "../resume-hint.js";
import { prepareRunOutput, withRunOutput } from "../run-output.js";
import { runWithUi, uiOptions } from "../run-ui.js";

export interface RescoreFlags {
  store?: string;
  json?: boolean;
  eval?: string;
  scorer?: string[];
  onlyErrors?: boolean;
  /** Go on although the eval's solver changed, recording the change. */
  allowEvalChange?: boolean;
  failUnder?: number;
  /** How long loading the eval module may take, ms. */
  loadTimeout?: number;
}

/**
 * `stet rescore <run-id>`: score the run's stored outputs again with the eval's scorers (or the
 * `--scorer` ones). No solver call; outputs, usage and timestamps of attempts stay as they are.
 * Interrupted, it exits 130 and prints the command that goes on with it.
 */
export async function rescoreCommand(runId: string, flags: RescoreFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const store = await openStore(flags.store, stale);
  try {
    const planning = await planRescore({
      store,
      runId,
      ...(flags.eval === undefined ? {} : { evalFile: flags.eval }),
      ...(flags.scorer === undefined ? {} : { scorers: flags.scorer }),
      ...(flags.onlyErrors ? { onlyErrors: true } : {}),
      ...(flags.allowEvalChange ? { allowEvalChange: true } : {}),
      ...(flags.loadTimeout === undefined ? {} : { loadTimeoutMs: flags.loadTimeout }),
      ...stale,
    });
    if (!planning.ok) throw planning.refusal.error;
    const planned = planning.rescore;
    const what = planned.pending.onlyErrors ? "scorer error(s)" : "stored output(s)";
    io.say(
      `${planned.continued ? "going on with the rescore: " : ""}${planned.count} ${what} ` +
        `to score with ${planned.scorers.map((s) => s.name).join(", ") || "no scorers"}; ` +
        "no solver calls",
    );
    const change = identityChange(runId, planned.run.config.scorers, planned);
    if (change) io.say(change);
    // The run's --output: its ResultSet is written anew from the store, with the new scores.
    const output = planned.run.config.output;
    await prepareRunOutput(output, "the run's --output");
    // The command that goes on with this rescore: what an interrupted one says, here and in
    // the step summary (a rescore changes scores, so CI gets its summary too).
    const args = [
      ...(flags.scorer ?? []).flatMap((name) => ["--scorer", name]),
      ...(flags.onlyErrors ? ["--only-errors"] : []),
      ...(flags.eval === undefined ? [] : ["--eval", flags.eval]),
      ...(flags.allowEvalChange ? ["--allow-eval-change"] : []),
    ];
    const again = rescoreHint(runId, args, flags.store);
    // Unfinished while the run still carries this rescore's pending mark (cleared at its end).
    const unfinished = async () =>
      (await store.runs.get(runId))?.config.rescore?.pass === planned.pending.pass;
    const ui = uiOptions(flags, {
      model: planned.run.config.model,
      summaryHint: again,
      unfinished,
    });
    const code = await withRunOutput(store, io, output, (attach) =>
      runWithUi(io, ui, (controls) =>
        executeRescore(planned, {
          store,
          ...stale,
          ...controls,
          ...attach(controls.onEvent),
        }),
      ),
    );
    if (!(await unfinished())) return code;
    io.stderr.write(
      `rescore stopped before it scored every output; go on with: ${hintLine(again)}\n`,
    );
    return code === EXIT.ok ? EXIT.interrupted : code;
  } finally {
    await store.close();
  }
}

/**
 * What a rescore changes in the identity the run records, when it changes anything: its scorers
 * (its metrics are over the new ones from now on) and what else, so the user knows that an eval
 * with the old scorers no longer resumes the run.
 */
function identityChange(
  runId: string,
  before: readonly string[],
  planned: { changes: readonly IdentityDifference[]; config: RunConfig },
): string | undefined {
  if (planned.changes.length === 0) return undefined;
  const names = (list: readonly string[]) => list.join(", ") || "none";
  const lines = planned.changes.map((d) => `  ${describeDifference(d)}`);
  const scorers = planned.changes.some((d) => d.field.startsWith("scorers"));
  return [
    `run ${runId}'s recorded eval changes (kept in its history):`,
    ...lines,
    ...(scorers
      ? [
          `its metrics are over ${names(planned.config.scorers)} from now on (were ${names(before)}); ` +
            "a resume takes an eval with these scorers: the eval with the old ones is refused " +
            "until the run is rescored with it again",
        ]
      : []),
  ].join("\n");
}
