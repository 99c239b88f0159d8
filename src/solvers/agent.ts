import { StetError } from "../core/errors.js";
import type { ModelCall, ModelReply, SolverContext, SolverFn, SolverResult } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { isLanguageModel } from "../core/language-model.js";
import { isLimitReached } from "../core/limits.js";
import type { ModelMessage, ToolCall, ToolChoice } from "../core/model-types.js";
import type { Sample } from "../core/types.js";
import { modelTools, prepareTools } from "./agent-tools.js";
import type { AgentToolContext, AgentTools, PreparedTool } from "./agent-tools.js";
import { anthropicToolChoice } from "./anthropic-messages.js";
import { endpointSecrets, resolveEndpoint } from "./chat-completion.js";
import { definedOnly, describeChat, describeModel } from "./chat.js";
import type { ChatSolverOptions } from "./chat.js";
import { conversationOf, inputProblem } from "./conversation-input.js";
import { prepareClient } from "./http-post.js";
import { providerOf } from "./model-name.js";
import { SolverError } from "./solver-error.js";

/** What a tool that throws does: its message becomes the tool's result, or the sample fails. */
export type OnToolError = "tell-model" | "fail";

export interface AgentSolverOptions<T = Record<string, unknown>> extends Omit<
  ChatSolverOptions,
  "backoff"
> {
  /** The tools the model may call, keyed by name (see AgentTool). */
  tools: AgentTools<T>;
  /**
   * Model calls per user turn (a sample has one, or those of its `{ turns }`); the loop ends
   * after this many. Default 20.
   */
  maxTurns?: number;
  /** Sent with every model call ("auto" when absent, as providers default). */
  toolChoice?: ToolChoice;
  /**
   * Whether the model may ask for several tools in one reply (OpenAI's `parallel_tool_calls`,
   * Anthropic's `disable_parallel_tool_use`); the provider's default when absent.
   */
  parallelToolCalls?: boolean;
  /** Default "tell-model": the error's message is the tool's result; "fail" ends the sample. */
  onToolError?: OnToolError;
}

/** The options every model call of the loop is made with. */
type CallOptions = Omit<AgentSolverOptions, "tools">;

/** How many model calls a sample may make when `maxTurns` is not given. */
export const DEFAULT_MAX_TURNS = 20;

/**
 * The standard tool-calling loop: ask the model (a journaled `ctx.chat`), run the tool calls of
 * its reply in the reply's order (each a journaled `ctx.step` named `tool:<name>` whose input is
 * the call's arguments), append the reply and the tool results, and repeat until a reply calls
 * no tool or `maxTurns` calls were made. A sample of scripted `{ turns }` runs the loop on each
 * user turn in order. A killed sample resumes at its first unfinished call.
 * Arguments that fail the tool's schema and unknown tool names are told to the model. The
 * output is the last reply's text; the transcript is the whole conversation.
 *
 * @example
 * solvers.agent({
 *   model: "gpt-4o-mini",
 *   tools: { add: { description: "a + b", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b } },
 * });
 */
export function agent<T extends Record<string, unknown>>(options: AgentSolverOptions<T>): SolverFn {
  const tools = prepareTools(options.tools as Record<string, never>);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const maxTurns = checkedMaxTurns(options.maxTurns);
  const onToolError = checkedOnToolError(options.onToolError);
  const given = options.model;
  const provider = isLanguageModel(given) ? undefined : providerOf(given, options.provider);
  if (provider) prepareClient(resolveEndpoint(options, provider).baseURL);

  const solver: SolverFn = async (sample, ctx): Promise<SolverResult> => {
    const { messages, turns } = conversationOf(sample, options.system, { turns: true });
    const loop: Loop = {
      call: baseCall(options, tools, ctx.model),
      tools: byName,
      maxTurns,
      run: { sample, ctx, onToolError },
      last: { content: "" },
    };
    try {
      // Scripted user turns: the loop answers each in order, on the whole conversation so far.
      let output = await answer(messages, loop);
      for (const turn of turns) {
        messages.push({ role: "user", content: turn });
        output = await answer(messages, loop);
      }
      return { output, transcript: messages };
    } catch (error) {
      // A per-sample limit (a refused call or step, or the wall time aborting one in flight):
      // the sample is scored on the last reply's text so far.
      if (!isLimitReached(error) && !isLimitReached(ctx.signal.reason)) throw error;
      return { output: loop.last.content, transcript: messages };
    }
  };
  solver.describe = () => ({
    ...(isLanguageModel(given) ? describeModel(given, options) : describeChat(given, options)),
    kind: "agent",
    ...definedOnly({
      tools: Object.fromEntries(
        tools.map((tool) => [
          tool.name,
          definedOnly({ description: tool.description, parameters: tool.schema }),
        ]),
      ),
      maxTurns,
      toolChoice: options.toolChoice,
      parallelToolCalls: options.parallelToolCalls,
      onToolError,
    }),
  });
  solver.secrets = () => endpointSecrets(options, provider ?? providerOf("", options.provider));
  solver.checkInput = (input) => inputProblem(input, { turns: true });
  return solver;
}

/** What one user turn's loop runs with. */
interface Loop {
  call: Omit<ModelCall, "messages">;
  tools: ReadonlyMap<string, PreparedTool>;
  maxTurns: number;
  run: ToolRun;
  /** The last reply's text: the output so far when a per-sample limit ends the loop. */
  last: { content: string };
}

/**
 * The loop on one user turn: appends each reply and its tool results to `messages` until a reply
 * calls no tool or `maxTurns` model calls were made; gives the last reply's text.
 */
async function answer(messages: ModelMessage[], loop: Loop): Promise<string> {
  const { call, tools, maxTurns, run } = loop;
  for (let turn = 1; ; turn++) {
    const reply: ModelReply = await run.ctx.chat({ ...call, messages: [...messages] });
    messages.push(reply.message);
    loop.last.content = reply.content;
    if (reply.toolCalls.length === 0) return reply.content;
    if (turn >= maxTurns) {
      messages.push(limitNote(maxTurns, reply.toolCalls.length));
      return reply.content;
    }
    // In the reply's order, one after the other: the journal numbers steps as they are made,
    // so a resumed sample must make them in the same order to replay them.
    for (const toolCall of reply.toolCalls) {
      const content = await runToolCall(toolCall, tools, run);
      messages.push({ role: "tool", toolCallId: toolCall.id, content });
    }
  }
}

/**
 * Every model call's fields but the messages. The model stays the eval's: `ctx.chat` prefers the
 * run's `--model` on its own (and journals the call under it).
 */
function baseCall(
  options: CallOptions,
  tools: readonly PreparedTool[],
  runModel: string | undefined,
): Omit<ModelCall, "messages"> {
  const call: Omit<ModelCall, "messages"> = { model: options.model, tools: modelTools(tools) };
  if (options.toolChoice !== undefined) call.toolChoice = options.toolChoice;
  const params = {
    ...parallelParams(options, runModel ?? options.model),
    ...options.params,
  };
  if (Object.keys(params).length > 0) call.params = params;
  for (const field of [
    "temperature",
    "maxTokens",
    "prices",
    "provider",
    "baseURL",
    "apiKey",
    "headers",
    "timeoutMs",
    "maxRetries",
  ] as const) {
    if (options[field] !== undefined) Object.assign(call, { [field]: options[field] });
  }
  return call;
}

/**
 * `parallelToolCalls` in the wire format of the provider the call goes to: OpenAI's
 * `parallel_tool_calls`, Anthropic's `disable_parallel_tool_use` (a member of `tool_choice`),
 * an AI SDK model's provider options. Nothing when not set. `params` given by the eval win.
 */
function parallelParams(
  options: CallOptions,
  requested: ChatSolverOptions["model"],
): Record<string, Json> {
  const parallel = options.parallelToolCalls;
  if (parallel === undefined) return {};
  if (isLanguageModel(requested)) {
    return {
      providerOptions: {
        openai: { parallelToolCalls: parallel },
        anthropic: { disableParallelToolUse: !parallel },
      },
    };
  }
  if (providerOf(requested, options.provider).name === "openai") {
    return { parallel_tool_calls: parallel };
  }
  const choice = options.toolChoice ?? "auto";
  if (choice === "none") return {};
  const toolChoice = anthropicToolChoice(choice) as Record<string, Json>;
  return { tool_choice: { ...toolChoice, disable_parallel_tool_use: !parallel } };
}

interface ToolRun {
  sample: Sample;
  ctx: SolverContext;
  onToolError: OnToolError;
}

/**
 * One tool call's result as the tool message's content. An unknown tool, arguments its schema
 * refuses and (under "tell-model") what the tool threw are told to the model as `Error: …`.
 */
async function runToolCall(
  call: ToolCall,
  tools: ReadonlyMap<string, PreparedTool>,
  { sample, ctx, onToolError }: ToolRun,
): Promise<string> {
  const tool = tools.get(call.name);
  if (!tool) {
    return `Error: there is no tool "${call.name}"; the tools are ${[...tools.keys()].join(", ")}`;
  }
  const checked = await tool.check(call.arguments);
  if (!checked.ok) return `Error: invalid arguments for tool "${call.name}": ${checked.problem}`;
  const thrown: { error?: unknown } = {};
  try {
    // Durable before the next model call goes out: a kill while the agent waits on the model
    // never runs a finished tool again (`behind` would trade that for one commit's latency).
    const execute = async () => {
      try {
        return await tool.execute(checked.args, toolContext(ctx, sample, call.id));
      } catch (error) {
        thrown.error = error;
        throw error;
      }
    };
    const result = await ctx.step(`tool:${call.name}`, call.arguments, execute);
    return toolContent(result);
  } catch (error) {
    // Only the tool's own failure (now, or recorded by the journal and replayed) is the model's
    // to hear: an abort, a timeout or a journal that cannot be written ends the attempt.
    const own = ("error" in thrown && error === thrown.error) || recordedFailure(error);
    if (ctx.signal.aborted || !own) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (onToolError === "fail") {
      throw new SolverError("solver", `tool "${call.name}" failed: ${message}`, { cause: error });
    }
    return `Error: ${message}`;
  }
}

/**
 * A step failure the journal recorded and now rethrows (the engine's StepFailed, which solvers/
 * cannot import: told by its name and its recorded error).
 */
function recordedFailure(error: unknown): boolean {
  return error instanceof Error && error.name === "StepFailed" && "stepError" in error;
}

/**
 * The context a tool runs in: its result is one journaled step, so what it calls inside is not
 * journaled again (a replayed tool never runs, and its inner steps would shift the numbering).
 */
function toolContext(ctx: SolverContext, sample: Sample, toolCallId: string): AgentToolContext {
  const { chatStep: _chatStep, ...rest } = ctx;
  return {
    ...rest,
    sample,
    toolCallId,
    chat: (call) => ctx.chat({ ...call, journal: false }),
    step: (name, input, fn) => ctx.step(name, input, fn, { journal: false }),
    languageModel: () => {
      throw new SolverError(
        "solver",
        "ctx.languageModel is not available inside a solvers.agent tool: call ctx.chat instead",
      );
    },
  };
}

function toolContent(result: unknown): string {
  if (typeof result === "string") return result;
  if (result === undefined || result === null) return "";
  return JSON.stringify(result);
}

/** The transcript's last message when `maxTurns` ended the loop with tool calls unanswered. */
function limitNote(maxTurns: number, calls: number): ModelMessage {
  return {
    role: "system",
    content:
      `stet: the agent loop stopped at maxTurns (${maxTurns} model calls); ` +
      `the last reply's ${calls === 1 ? "tool call was" : `${calls} tool calls were`} not run`,
  };
}

function checkedMaxTurns(maxTurns: number | undefined): number {
  if (maxTurns === undefined) return DEFAULT_MAX_TURNS;
  if (!Number.isInteger(maxTurns) || maxTurns < 1 || maxTurns > 10_000) {
    throw new StetError(
      "E_CONFIG",
      `solvers.agent: maxTurns must be a whole number from 1 to 10000, got ${String(maxTurns)}`,
    );
  }
  return maxTurns;
}

function checkedOnToolError(value: OnToolError | undefined): OnToolError {
  if (value === undefined) return "tell-model";
  if (value === "tell-model" || value === "fail") return value;
  throw new StetError(
    "E_CONFIG",
    `solvers.agent: onToolError must be "tell-model" or "fail", got ${JSON.stringify(value)}`,
  );
}
