import type { SolverContext } from "../../src/core/eval.js";

/**
 * A SolverContext for calling a scorer or solver directly in a unit test. Its `chat` refuses:
 * a test that needs model calls runs the eval through the engine against a mock server.
 *
 * @example await scorer.score({ sample, output, ctx: solverContext() });
 */
export function solverContext(overrides: Partial<SolverContext> = {}): SolverContext {
  return {
    runId: "r",
    epoch: 1,
    signal: new AbortController().signal,
    chat: () => Promise.reject(new Error("no model calls in this test")),
    step: async (_name, _input, fn) => fn(),
    ...overrides,
  } as SolverContext;
}
