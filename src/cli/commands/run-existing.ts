import { StetError } from "../../core/errors.js";
import type { Store } from "../../store/types.js";
import { resumeInStore, type ResumeFlags } from "./resume.js";

/** What `stet run` asks of a run that exists: its resume flags, and those only a new run takes. */
export interface ExistingRunFlags extends ResumeFlags {
  /** `--reuse`: goes on only with a run started with the same one. */
  reuse?: string;
  /** `--resume-from`: goes on only with a run seeded from the same file's bytes. */
  resumeFrom?: string;
}

/**
 * `stet run --run-id <id>` when run `id` exists: the resume way, whose identity check
 * (`checkEval`) refuses a run of another eval. `--detach`, which starts a new run, is refused
 * (`E_USAGE`), and so are a `--reuse` the run was not started with (`checkReuseOfExisting`) and
 * a `--resume-from` file it was not seeded from (`checkSeedOfExisting`), before the eval loads.
 *
 * @example return await resumeExisting(store, "nightly-7", { ...flags, eval: "evals/qa.ts" });
 */
export async function resumeExisting(
  store: Store,
  runId: string,
  flags: ExistingRunFlags,
): Promise<number> {
  if (flags.detach) {
    throw new StetError(
      "E_USAGE",
      `--detach starts a new run, and run ${runId} exists: collect it with \`stet resume ${runId}\`, or give a new --run-id`,
      { details: { runId } },
    );
  }
  await checkReuseOfExisting(store, runId, flags.reuse);
  await checkSeedOfExisting(store, runId, flags.resumeFrom);
  return resumeInStore(store, runId, flags);
}

/**
 * `--run-id <existing> --reuse <x>`: the same command again goes on with the run it started
 * (its reused keys are stored in it, so the resume executes only the rest). A run that was
 * started without `--reuse`, or with another one, is refused (`E_USAGE`) rather than resumed
 * with the flag ignored.
 */
async function checkReuseOfExisting(
  store: Store,
  runId: string,
  reuse: string | undefined,
): Promise<void> {
  if (reuse === undefined) return;
  const run = await store.runs.get(runId);
  const recorded = run?.config.reuse?.requested;
  if (recorded === reuse) return;
  const started =
    recorded === undefined ? "was started without --reuse" : `was started with --reuse ${recorded}`;
  throw new StetError(
    "E_USAGE",
    `--run-id ${runId} names an existing run that ${started}; --reuse ${reuse} only applies to a new run: ` +
      `drop --reuse to resume it, or give a new --run-id`,
    { details: { runId } },
  );
}

/**
 * `--run-id <existing> --resume-from <file>`: the same command again goes on with the run the
 * file seeded (it holds attempts imported from those bytes, provenance `sha256:<hex>`). A run
 * with none of them is refused (`E_USAGE`) rather than resumed with the file ignored, which
 * would buy again every result the file holds: `stet import` adds them to an existing run.
 */
async function checkSeedOfExisting(
  store: Store,
  runId: string,
  resumeFrom: string | undefined,
): Promise<void> {
  if (resumeFrom === undefined) return;
  // EvalPort's reading loads only for --resume-from.
  const { readHashed } = await import("../../evalport/read-import-file.js");
  const { path, sha256 } = await readHashed(resumeFrom);
  const source = `sha256:${sha256}`;
  for await (const page of store.reads.attemptHeadPages(runId)) {
    if (page.some((a) => a.provenance.kind === "imported" && a.provenance.source === source)) {
      return;
    }
  }
  throw new StetError(
    "E_USAGE",
    `--run-id ${runId} names an existing run that was not seeded from ${path}; --resume-from only applies to a new run: ` +
      `drop --resume-from to resume it, or add the file's results to it with \`stet import ${resumeFrom} --into ${runId}\``,
    { details: { runId, file: path } },
  );
}
