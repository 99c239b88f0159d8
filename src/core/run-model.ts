import type { RunConfig } from "./types.js";

/**
 * The model a run executes with: its `--model`, else its solver's (`solvers.chat({ model })`
 * records it in the solver's description); undefined for a solver that names none.
 *
 * @example runModel(run.config) // "gpt-4o-mini"
 */
export function runModel(
  config: Pick<RunConfig, "model" | "identity" | "solver">,
): string | undefined {
  if (config.model !== undefined) return config.model;
  const model = (config.identity?.solver ?? config.solver).model;
  return typeof model === "string" ? model : undefined;
}
