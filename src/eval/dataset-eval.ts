import { basename, dirname, extname, resolve } from "node:path";
import type { Scorer } from "../core/eval.js";
import type { DatasetEvalConfig } from "../core/types.js";
import { StetError } from "../core/errors.js";
import { exact, includes, jsonMatch, numeric } from "../scorers/index.js";
import { chat } from "../solvers/chat.js";
import { defineEval } from "./define-eval.js";
import type { LoadedEvalFile } from "./load-eval-file.js";

/**
 * An eval with no module (`stet run --dataset data.jsonl --model m --scorer exact`): the dataset
 * file, asked of a chat model through `solvers.chat` (OPENAI_BASE_URL, OPENAI_API_KEY), scored by
 * built-in scorers named on the command line. A run records it (`RunConfig.datasetEval`), so a
 * resume builds the same eval again.
 */
export type DatasetEvalSpec = DatasetEvalConfig;

/** The scorers `--scorer` names: those that need nothing but the sample's target. */
export const DATASET_SCORERS: Readonly<Record<string, () => Scorer>> = {
  exact: () => exact(),
  "exact-ci": () => exact({ caseSensitive: false }),
  includes: () => includes(),
  "includes-ci": () => includes({ caseSensitive: false }),
  numeric: () => numeric(),
  json: () => jsonMatch(),
};

/**
 * The spec of `--dataset` flags, checked: a dataset path resolved against `cwd`, a model, and
 * known scorer names (default `exact`). Throws `E_USAGE` naming what is wrong.
 *
 * @example datasetEvalSpec({ dataset: "qa.jsonl", model: "gpt-4o-mini", scorers: ["includes"] })
 */
export function datasetEvalSpec(
  flags: { dataset: string; model?: string; scorers?: string[]; system?: string },
  cwd = process.cwd(),
): DatasetEvalSpec {
  if (flags.model === undefined)
    throw new StetError("E_USAGE", "--dataset needs --model: the chat model to ask");
  const scorers = flags.scorers?.length ? flags.scorers : ["exact"];
  const unknown = scorers.filter((name) => !(name in DATASET_SCORERS));
  if (unknown.length > 0)
    throw new StetError(
      "E_USAGE",
      `unknown --scorer ${unknown.map((n) => JSON.stringify(n)).join(", ")}: ` +
        `choose from ${Object.keys(DATASET_SCORERS).join(", ")}`,
    );
  return {
    dataset: resolve(cwd, flags.dataset),
    model: flags.model,
    scorers,
    ...(flags.system === undefined ? {} : { system: flags.system }),
  };
}

/**
 * The eval of a spec, as a loaded eval file is: named after the dataset file (`qa.jsonl` → `qa`),
 * its relative paths resolving beside the dataset.
 *
 * @example const loaded = datasetEval(spec); await resolveEval(loaded.eval, { baseDir: loaded.baseDir });
 */
export function datasetEval(spec: DatasetEvalSpec): LoadedEvalFile {
  return {
    eval: defineEval({
      name: basename(spec.dataset, extname(spec.dataset)),
      dataset: spec.dataset,
      solver: chat({
        model: spec.model,
        temperature: 0,
        ...(spec.system === undefined ? {} : { system: spec.system }),
      }),
      scorers: spec.scorers.map((name) => DATASET_SCORERS[name]!()),
    }),
    path: spec.dataset,
    baseDir: dirname(spec.dataset),
  };
}
