import { resolve } from "node:path";
import { loadEvalSource } from "../../eval/load-eval-source.js";
import { resolveEval } from "../../eval/resolve-eval.js";
import { runEval } from "../../engine/run-eval.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { withRunOutput } from "../run-output.js";
import { runWithUi } from "../run-ui.js";
import { staleLimit } from "../../engine/stale-limit.js";
import { resumeCommand } from "./resume.js";

export interface RunFlags {
  model?: string;
  epochs?: number;
  concurrency?: number;
  limit?: number;
  timeout?: number;
  store?: string;
  json?: boolean;
  resume?: string;
  failUnder?: number;
  rerunChanged?: boolean;
  resumeFrom?: string;
  /** Results JSONL streamed as samples finish; the ResultSet beside it at the end. */
  output?: string;
}

/** `stet run <eval>`: start a run (or, with `--resume <id>`, continue one). */
export async function runCommand(target: string, flags: RunFlags): Promise<number> {
  if (flags.resume) return resumeCommand(flags.resume, { ...flags, eval: target });
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const loaded = await loadEvalSource(target);
  const ev = await resolveEval(loaded.eval, {
    baseDir: loaded.baseDir,
    limit: flags.limit,
    epochs: flags.epochs,
    concurrency: flags.concurrency,
    timeoutMs: flags.timeout,
  });
  // Read and checked before the run exists: a bad file refuses without creating one.
  const seed =
    flags.resumeFrom === undefined
      ? undefined
      : await (await import("../../evalport/read-seed.js")).readSeed(flags.resumeFrom, ev);
  const store = await openStore(flags.store);
  try {
    return await withRunOutput(store, io, flags.output, (tee) =>
      runWithUi(io, uiOptions(flags), (controls) =>
        runEval({
          store,
          eval: ev,
          ...(seed === undefined ? {} : { seed: seed.drafts }),
          evalPath: loaded.path,
          ...(flags.output === undefined ? {} : { output: resolve(flags.output) }),
          ...(flags.model === undefined ? {} : { model: flags.model }),
          ...(flags.limit === undefined ? {} : { limit: flags.limit }),
          ...stale,
          ...controls,
          onEvent: tee(controls.onEvent),
        }),
      ),
    );
  } finally {
    await store.close();
  }
}

export function uiOptions(flags: { json?: boolean; failUnder?: number }) {
  return {
    json: flags.json ?? false,
    ...(flags.failUnder === undefined ? {} : { failUnder: flags.failUnder }),
  };
}
