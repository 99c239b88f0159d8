import type { SolverContext, SolverFn } from "../core/eval.js";
import type { Json } from "../core/json.js";
import type { Sample } from "../core/types.js";
import { chat, type ChatSolverOptions } from "../solvers/chat.js";
import type { ChatEndpoint } from "../solvers/chat-completion.js";
import { SolverError } from "../solvers/solver-error.js";
import type { Suite, SuiteProvider } from "./suite-schema.js";
import { testCaseDetails } from "./test-case-sample.js";

/**
 * The endpoint of a suite's `config.provider`: `api_base` as the base URL and the key read from
 * the environment variable `api_key_env` at call time (never stored). Without `api_key_env`,
 * the chat solver's defaults apply (OPENAI_BASE_URL, OPENAI_API_KEY).
 *
 * @example suiteEndpoint({ config: { provider: { api_base: "http://localhost:8000/v1" } } })
 */
export function suiteEndpoint(
  suite: Pick<Suite, "config">,
  provider?: SuiteProvider,
): ChatEndpoint {
  const p = provider ?? suite.config?.provider ?? {};
  const retry = suite.config?.retry;
  return {
    ...(p.api_base === undefined ? {} : { baseURL: p.api_base }),
    ...(p.api_key_env === undefined ? {} : { apiKey: process.env[p.api_key_env] ?? "" }),
    ...(retry?.max_attempts === undefined
      ? {}
      : { maxRetries: Math.max(0, retry.max_attempts - 1) }),
    ...(retry?.backoff_ms === undefined ? {} : { backoff: { initialMs: retry.backoff_ms } }),
  };
}

/**
 * The solver of a suite: the chat solver with `config.provider` as defaults (model,
 * temperature, max_tokens, api_base, api_key_env, extra), a test case's own `provider` and
 * `params` over them, and `--model` (ctx.model) over everything, as for any chat eval. An
 * array input is a conversation: turns alternate user, assistant, user, …. A test case's
 * `timeout_ms` (else `config.defaults.timeout_ms`) bounds its call.
 *
 * @example const solver = suiteSolver(suite); // then runEval({ eval: { ..., solver } })
 */
export function suiteSolver(suite: Suite): SolverFn {
  const defaults = suite.config?.provider ?? {};
  const solver: SolverFn = async (sample, ctx) => {
    const details = testCaseDetails(sample);
    const provider = { ...defaults, ...details.provider };
    const model = ctx.model ?? provider.model;
    if (model === undefined) {
      throw new SolverError("solver", "the suite's config.provider names no model; pass --model");
    }
    const options = chatOptions({ ...provider, model }, details.params, suite);
    const timeoutMs = details.timeout_ms ?? suite.config?.defaults?.timeout_ms;
    return withTimeout(timeoutMs, ctx, (c) => chat(options)(asChat(sample), c));
  };
  const described = chat(
    chatOptions({ ...defaults, model: defaults.model ?? "(--model)" }, {}, suite),
  );
  solver.describe = () => ({
    ...described.describe!(),
    apiKeyEnv: defaults.api_key_env ?? "OPENAI_API_KEY",
    suite: suite.id,
  });
  // One chat call per test case: under --batch it goes through the provider's batches (ctx.batch
  // is carried by the context the timeout wraps).
  solver.batchable = true;
  return solver;
}

function chatOptions(
  provider: SuiteProvider & { model: string },
  params: Record<string, Json> | undefined,
  suite: Suite,
): ChatSolverOptions {
  const { temperature, max_tokens: maxTokens, ...rest } = { ...params };
  return {
    ...suiteEndpoint(suite, provider),
    model: provider.model,
    ...(typeof temperature === "number"
      ? { temperature }
      : provider.temperature === undefined
        ? {}
        : { temperature: provider.temperature }),
    ...(typeof maxTokens === "number"
      ? { maxTokens }
      : provider.max_tokens === undefined
        ? {}
        : { maxTokens: provider.max_tokens }),
    ...(provider.extra || Object.keys(rest).length > 0
      ? { params: { ...provider.extra, ...rest } }
      : {}),
  };
}

function asChat(sample: Sample): Sample {
  if (!Array.isArray(sample.input)) return sample;
  const messages = sample.input.map((content, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content,
  }));
  return { ...sample, input: messages };
}

async function withTimeout<T>(
  timeoutMs: number | undefined,
  ctx: SolverContext,
  call: (ctx: SolverContext) => T | Promise<T>,
): Promise<T> {
  if (timeoutMs === undefined) return call(ctx);
  const timer = AbortSignal.timeout(timeoutMs);
  try {
    return await call({ ...ctx, signal: AbortSignal.any([ctx.signal, timer]) });
  } catch (error) {
    if (timer.aborted && !ctx.signal.aborted) {
      throw new SolverError("timeout", `the test case's timeout_ms (${timeoutMs} ms) ran out`);
    }
    throw error;
  }
}
