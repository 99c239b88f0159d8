import { runModel } from "../core/run-model.js";
import { createRequire } from "node:module";
import * as z from "zod";
import { StetError } from "../core/errors.js";
import { compareKeys } from "../core/keys.js";
import { selectOutcomes } from "../core/outcomes.js";
import type { Attempt, Run, RunConfig, SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import { assembleResultSet, type ResultSetHeader } from "./assemble-result-set.js";
import { toResult } from "./result-mapping.js";
import { applyReviews } from "./review-grades.js";
import { loadTrajectories } from "./trajectory.js";
import {
  EVALPORT_VERSION,
  type ResultSetDocument,
  type ResultSetProvider,
} from "./result-set-types.js";
import { rfc3339 } from "./timestamps.js";

/** A run with its sample snapshot and each key's current outcome, sorted by key. */
export interface RunOutcomes {
  run: Run;
  samples: SampleRecord[];
  outcomes: Attempt[];
}

/**
 * Reads a run's current outcomes: per key, the latest scored attempt for the sample's snapshot
 * fingerprint, else its latest error (`selectOutcomes`), in key order. `E_RUN_NOT_FOUND` for
 * an unknown run.
 *
 * @example const { run, outcomes } = await loadOutcomes(store, "r_abc");
 */
export async function loadOutcomes(store: Store, runId: string): Promise<RunOutcomes> {
  const run = await store.runs.get(runId);
  if (!run)
    throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`);
  const [samples, attempts] = await Promise.all([
    store.reads.getSamples(runId),
    store.reads.listAttempts(runId),
  ]);
  const fingerprints = new Map(samples.map((r) => [r.sample.id, r.fingerprint]));
  return { run, samples, outcomes: selectOutcomes(attempts, fingerprints).sort(compareKeys) };
}

/**
 * The EvalPort ResultSet of a run: one Result per key's current outcome (see `toResult`),
 * sorted by (test_case_id, attempt); `suite_id` is the eval name, `started_at` the run's
 * creation; `provider` from the run's model and solver settings; `runner` stet and its
 * version. A run with keys not yet scored is partial (`metadata.openeval.partial`, with the
 * covered ids; see `assembleResultSet`). A run without any outcome has no valid ResultSet
 * (`results` needs one item): StetError `E_INVALID_INPUT`, so no invalid file is written.
 * It holds the whole run in memory (every outcome and Result): for a large run, stream the same
 * document with `prepareResultSet` and `writeResultSet`, as `stet export`, the API and
 * `--output` do.
 *
 * @example
 * const doc = await buildResultSet(store, "r_abc");
 * validateDocument(doc, "resultset").valid; // true
 */
export async function buildResultSet(store: Store, runId: string): Promise<ResultSetDocument> {
  const { run, samples, outcomes } = await loadOutcomes(store, runId);
  if (outcomes.length === 0) {
    throw new StetError(
      "E_INVALID_INPUT",
      `run ${runId} has no finished sample yet, and an EvalPort ResultSet needs at least one result; nothing was written`,
    );
  }
  const journal = await loadTrajectories(store, runId);
  // People's reviews fill the suite's `human` graders and travel with their reviewers.
  const reviewed = applyReviews(outcomes, await store.reviews.list(runId));
  return assembleResultSet(
    resultSetHeader(run),
    reviewed.outcomes.map((a) =>
      toResult(a, { epochs: run.config.epochs, journal, reviews: reviewed.reviewsOf }),
    ),
    { testCaseIds: samples.map((r) => r.sample.id), epochs: run.config.epochs },
  );
}

/**
 * A run's ResultSet header: `suite_id` the eval name, `started_at` the run's creation, `provider`
 * from its model and solver settings, `runner` stet and its version.
 *
 * @example resultSetHeader(run).runner // { name: "stet", version: "0.1.0" }
 */
export function resultSetHeader(run: Run): ResultSetHeader {
  const provider = providerOf(run.config);
  return {
    version: EVALPORT_VERSION,
    suite_id: run.evalName,
    run_id: run.id,
    started_at: rfc3339(run.createdAt),
    ...(provider && { provider }),
    runner: { name: "stet", version: stetVersion() },
  };
}

function providerOf(config: RunConfig): ResultSetProvider | undefined {
  const { temperature, maxTokens } = config.solver;
  const model = runModel(config);
  const provider: ResultSetProvider = {
    ...(typeof model === "string" && { model }),
    ...(typeof temperature === "number" && { temperature }),
    ...(typeof maxTokens === "number" && Number.isInteger(maxTokens) && { max_tokens: maxTokens }),
  };
  return Object.keys(provider).length > 0 ? provider : undefined;
}

let version: string | undefined;

/**
 * stet's package version, read once from its package.json. Resolved by the package's own name
 * (a self-reference through "exports"), so it holds from src/, from dist/ and from any bundle chunk.
 */
function stetVersion(): string {
  version ??= z
    .object({ version: z.string() })
    .parse(createRequire(import.meta.url)("stet/package.json")).version;
  return version;
}
