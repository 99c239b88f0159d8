import { StetError } from "../core/errors.js";
import type { SolverContext, SolverResult } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { isLanguageModel } from "../core/language-model.js";
import type { ModelMessage } from "../core/model-types.js";
import type { Secret } from "../core/secrets.js";
import { sourceSha256 } from "../core/source-hash.js";
import type { Sample, Usage } from "../core/types.js";
import { chat, definedOnly, describeChat, describeModel } from "./chat.js";
import type { ChatSolverOptions } from "./chat.js";

/** Says, after each of the user's messages, whether the conversation ends there. */
export type StopWhen = (message: string, conversation: ModelMessage[]) => boolean;

export interface SimulatedUserOptions extends Omit<ChatSolverOptions, "system"> {
  /**
   * Who the user is and what they want: the system prompt of the user's model. A function gives
   * it per sample (from its metadata, say).
   */
  persona: string | ((sample: Sample) => string);
  /** Assistant replies in a conversation (the first answers the sample's input); at most 10000. */
  maxTurns: number;
  /**
   * Ends the conversation after a user message: a phrase the message contains (`"###STOP###"`),
   * or a predicate on the message and the conversation, that message included.
   */
  stop?: string | StopWhen;
}

/** The user's side of `solvers.conversation`: made by `simulatedUser`. */
export interface SimulatedUser {
  readonly maxTurns: number;
  /**
   * The user's next message on `conversation`: one journaled model call with the persona as its
   * system prompt and the conversation with its roles swapped. Its usage is returned (marked
   * reused when replayed); the run's `--model` does not replace the user's model.
   */
  reply(
    conversation: readonly ModelMessage[],
    sample: Sample,
    ctx: SolverContext,
  ): Promise<{ content: string; usage?: Usage }>;
  /** Whether `message`, the user's latest, ends the conversation. */
  stops(message: string, conversation: ModelMessage[]): boolean;
  /** The user's part of the run's identity: model, endpoint, persona, maxTurns, stop. */
  describe(): Record<string, Json>;
  secrets(): Secret[];
}

/**
 * A model that plays the user against the solver of `solvers.conversation`: after each
 * assistant reply, until `maxTurns` replies or `stop`, it writes the user's next message. Its
 * calls are journaled like the assistant's, so a killed conversation resumes at its first
 * unfinished call; their usage is the attempt's, under the spend cap.
 *
 * @example
 * simulatedUser({ model: "gpt-4o-mini", persona: "A customer whose parcel is late. Say DONE when helped.", maxTurns: 6, stop: "DONE" });
 */
export function simulatedUser(options: SimulatedUserOptions): SimulatedUser {
  const { persona, maxTurns, stop, ...endpoint } = checked(options);
  const model = chat(endpoint);
  const stopWhen: StopWhen | undefined =
    typeof stop === "string" ? (message) => message.includes(stop) : stop;
  return {
    maxTurns,
    async reply(conversation, sample, ctx) {
      const system = typeof persona === "string" ? persona : persona(sample);
      const input: ModelMessage[] = [{ role: "system", content: system }, ...swapped(conversation)];
      // solvers.chat always answers with a whole result.
      const result = (await model({ id: sample.id, input }, userContext(ctx))) as SolverResult;
      const content = typeof result.output === "string" ? result.output : "";
      return result.usage === undefined ? { content } : { content, usage: result.usage };
    },
    stops: (message, conversation) => stopWhen?.(message, conversation) ?? false,
    describe: () => ({
      ...(isLanguageModel(endpoint.model)
        ? describeModel(endpoint.model, endpoint)
        : describeChat(endpoint.model, endpoint)),
      kind: "simulated-user",
      ...definedOnly({
        persona: typeof persona === "string" ? persona : functionIdentity(persona),
        maxTurns,
        stop: typeof stop === "function" ? functionIdentity(stop) : stop,
      }),
    }),
    secrets: () => model.secrets?.() ?? [],
  };
}

/**
 * The conversation as the user's model sees it: the user's messages are its own (assistant),
 * the assistant's are what it answers (user). System and tool messages, and an assistant
 * message with only tool calls, are not the user's to see.
 */
export function swapped(conversation: readonly ModelMessage[]): ModelMessage[] {
  const seen: ModelMessage[] = [];
  for (const message of conversation) {
    if (message.role === "user") seen.push({ role: "assistant", content: message.content });
    if (message.role !== "assistant") continue;
    const { content } = message;
    const empty = content === null || content === "" || (Array.isArray(content) && !content.length);
    if (!empty) seen.push({ role: "user", content });
  }
  return seen;
}

/**
 * The user's calls keep their own model (not the run's `--model`, which is the assistant's), and
 * their replies are acted on (sent on in the conversation), so each entry is waited for.
 */
function userContext(ctx: SolverContext): SolverContext {
  const { model: _runModel, chatStep, ...rest } = ctx;
  if (!chatStep) return rest;
  return { ...rest, chatStep: (input, send) => chatStep(input, send, { last: false }) };
}

function functionIdentity(fn: (...args: never[]) => unknown): Record<string, Json> {
  return { kind: "function", sourceSha256: sourceSha256(fn) };
}

function checked(options: SimulatedUserOptions): SimulatedUserOptions {
  const refuse = (problem: string): never => {
    throw new StetError("E_CONFIG", `simulatedUser: ${problem}`);
  };
  const { persona, maxTurns, stop } = options;
  if (options.model === undefined) refuse("needs a model");
  if (typeof persona !== "function" && (typeof persona !== "string" || persona.trim() === "")) {
    refuse(
      "persona must be a non-empty string (the user's system prompt) or a function of the sample",
    );
  }
  if (!Number.isInteger(maxTurns) || maxTurns < 1 || maxTurns > 10_000) {
    refuse(`maxTurns must be a whole number from 1 to 10000, got ${String(maxTurns)}`);
  }
  if (stop !== undefined && typeof stop !== "function" && (typeof stop !== "string" || !stop)) {
    refuse("stop must be a non-empty phrase or a function (message, conversation) => boolean");
  }
  return options;
}
