import { Option } from "commander";
import { bounded, modelName } from "../flag-values.js";

/** `--store`, for every command that opens the store. */
export const storeOption = () =>
  new Option("--store <path>", "store location (default: $STET_STORE or .stet/stet.db)");
/** `--json`, for every command that can print machine-readable output. */
export const jsonOption = () => new Option("--json", "print machine-readable JSON on stdout");
/**
 * `--max-cost`, for every command that executes a run's keys (`run`, `resume`, a worker): a cap
 * on the run's total spend (every invocation's), not on this invocation's.
 */
export const maxCostOption = (
  what = "cap on the run's total spend in US dollars: at the cap, stop dispatching and exit 6 (resumable)",
) => new Option("--max-cost <usd>", what).argParser(bounded("maxCost"));
/** `--load-timeout`, for every command that loads an eval module. */
export const loadTimeoutOption = () =>
  new Option(
    "--load-timeout <ms>",
    "how long loading an eval module may take before it is refused (default 60000)",
  ).argParser(bounded("loadTimeoutMs"));

/**
 * `--cache` and `--no-cache`, for `run` and `resume`: the reply cache of model calls on or off
 * for this invocation, whatever the eval's `cache` says.
 */
export const cacheOptions = (): Option[] => [
  new Option(
    "--cache",
    "serve model calls made before (same endpoint, key, model, messages, tools, parameters, epoch) from the store's reply cache, counted as reused",
  ),
  new Option("--no-cache", "send every model call, whatever the eval's `cache` says"),
];

/**
 * `--rpm` and `--tpm`, for every command that executes a run's keys: the rate limit of the run's
 * main model (its `--model`, else every endpoint the eval declares no limit for), shared by every
 * run and worker on the store.
 */
export const rateOptions = (): Option[] => [
  new Option(
    "--rpm <n>",
    "requests per minute the run's model may receive (shared by every run and worker on the store)",
  ).argParser(bounded("rpm")),
  new Option(
    "--tpm <n>",
    "tokens per minute the run's model may receive (estimated before sending: prompt characters / 4 + max tokens)",
  ).argParser(bounded("tpm")),
];

/**
 * `--batch`, for `run` and `resume`: the solver's model calls go through the provider's batch
 * API (OpenAI's, Anthropic's), whatever the eval's `batch` says.
 */
export const batchOption = (): Option =>
  new Option(
    "--batch",
    "send the model calls through the provider's batch API (half price, results within 24h); kill-safe: a resume adopts the batches already submitted",
  );

/** A repeatable option's values, in the order given. */
export function repeated(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** `--model`, repeatable: each a model name (`modelName`). */
export function models(value: string, previous: string[] | undefined): string[] {
  return repeated(modelName(value), previous);
}
