import { StetError } from "../core/errors.js";
import { isLimitReached } from "../core/limits.js";
import type { SolverContext, SolverFn, SolverResult } from "../core/eval.js";
import { canonicalJson } from "../core/json.js";
import type { Json } from "../core/json.js";
import type { ModelMessage } from "../core/model-types.js";
import { normalizeSolverReturn } from "../core/normalize.js";
import { sourceSha256 } from "../core/source-hash.js";
import type { Usage } from "../core/types.js";
import { addUsage } from "../core/usage.js";
import { conversationOf, inputProblem } from "./conversation-input.js";
import type { SimulatedUser } from "./simulated-user.js";

export interface ConversationOptions {
  /**
   * The solver under test (`solvers.chat`, `solvers.agent`, or a function): it answers each turn,
   * given the sample with `input` the conversation so far, a list of messages ending with the
   * user's (the first turn: the sample's own input).
   */
  assistant: SolverFn;
  /** Plays the user: see simulatedUser. */
  user: SimulatedUser;
}

/**
 * A conversation between the solver and a simulated user: the assistant answers the sample's
 * input (a string or a list of messages), the user's model answers that, and so on, until the
 * assistant has replied `maxTurns` times or the user's message meets `stop`. Every call of both
 * sides is journaled, so a conversation killed in turn 4 resumes at turn 4. The output is the
 * last assistant reply; the transcript is the whole conversation; both sides' usage is the
 * attempt's.
 *
 * @example
 * solvers.conversation({
 *   assistant: solvers.chat({ model: "gpt-4o-mini", system: "You are a support agent." }),
 *   user: simulatedUser({ model: "gpt-4o-mini", persona: "A customer whose parcel is late.", maxTurns: 6 }),
 * });
 */
export function conversation(options: ConversationOptions): SolverFn {
  const { assistant, user } = options;
  if (typeof assistant !== "function") {
    throw new StetError(
      "E_CONFIG",
      "solvers.conversation: assistant must be a solver (a function)",
    );
  }
  if (typeof user?.reply !== "function") {
    throw new StetError("E_CONFIG", "solvers.conversation: user must be a simulatedUser({ ... })");
  }
  const solver: SolverFn = async (sample, ctx): Promise<SolverResult> => {
    let messages = conversationOf(sample, undefined, { turns: false }).messages;
    const spent: Spent = { usage: null, retries: 0 };
    // The assistant's last answer: the output so far when a per-sample limit ends the talk.
    const last: { output: Json } = { output: "" };
    try {
      for (let turn = 1; ; turn++) {
        const final = turn >= user.maxTurns;
        const input = turn === 1 ? sample.input : messages;
        const answered = normalizeSolverReturn(
          await assistant({ ...sample, input }, assistantContext(ctx, final)),
        );
        count(spent, answered.usage, answered.retries);
        last.output = answered.output;
        messages = continued(messages, answered);
        if (final) break;
        const said = await user.reply(messages, sample, ctx);
        count(spent, said.usage);
        messages = [...messages, { role: "user", content: said.content }];
        if (user.stops(said.content, messages)) break;
      }
    } catch (error) {
      if (!isLimitReached(error) && !isLimitReached(ctx.signal.reason)) throw error;
    }
    return {
      output: last.output,
      transcript: messages,
      ...(spent.usage === null ? {} : { usage: spent.usage }),
      ...(spent.retries === 0 ? {} : { retries: spent.retries }),
    };
  };
  solver.describe = () => ({
    kind: "conversation",
    assistant: assistant.describe?.() ?? {
      kind: "function",
      name: assistant.name || "anonymous",
      sourceSha256: sourceSha256(assistant),
    },
    user: user.describe(),
  });
  solver.secrets = () => [...(assistant.secrets?.() ?? []), ...user.secrets()];
  solver.checkInput = (input) => {
    if (typeof input === "object" && input !== null && !Array.isArray(input) && "turns" in input) {
      return "input.turns: a conversation with a simulated user opens with a string or a list of messages, not scripted turns";
    }
    return inputProblem(input, { turns: false }) ?? assistant.checkInput?.(input);
  };
  return solver;
}

/** What the assistant's turns returned as spent (usage of calls outside ctx.chat, re-sends). */
interface Spent {
  usage: Usage | null;
  retries: number;
}

function count(spent: Spent, usage: Usage | undefined, retries = 0): void {
  if (usage !== undefined) spent.usage = addUsage(spent.usage, usage);
  spent.retries += retries;
}

/**
 * The assistant's replies are sent on to the user's model, so each entry is waited for; only the
 * last turn's reply is the output alone (see SolverContext.chatStep's `last`).
 */
function assistantContext(ctx: SolverContext, final: boolean): SolverContext {
  const { chatStep } = ctx;
  if (!chatStep || final) return ctx;
  return { ...ctx, chatStep: (input, send) => chatStep(input, send, { last: false }) };
}

/**
 * The conversation after the assistant's turn: its transcript when that is the conversation
 * continued (the messages it was given, a system prompt it put first allowed, then its own:
 * `solvers.chat`'s and `solvers.agent`'s are), else the conversation and its output as the
 * assistant's message.
 */
function continued(messages: ModelMessage[], answered: SolverResult): ModelMessage[] {
  const { transcript, output } = answered;
  if (Array.isArray(transcript) && inputProblem(transcript, { turns: false }) === undefined) {
    const list = transcript as ModelMessage[];
    const added = list[0]?.role === "system" && messages[0]?.role !== "system" ? 1 : 0;
    const given = list.slice(added, added + messages.length);
    const more = list.length > added + messages.length;
    if (more && canonicalJson(given as Json) === canonicalJson(messages as Json)) return list;
  }
  const content = typeof output === "string" ? output : JSON.stringify(output);
  return [...messages, { role: "assistant", content }];
}
