import type { Json } from "../core/json.js";
import type { ModelMessage } from "../core/model-types.js";
import type { Sample } from "../core/types.js";
import { SolverError } from "./solver-error.js";

/**
 * The roles of a message in a sample's `input`: the canonical four, and OpenAI's `developer`
 * (a system message to every provider), which models were sent before roles were checked.
 */
export const MESSAGE_ROLES = ["system", "user", "assistant", "tool", "developer"] as const;

/**
 * A sample's conversation as a solver plays it: it answers `messages` first, then each of the
 * scripted user `turns` in order, each appended to the conversation so far.
 */
export interface ScriptedConversation {
  messages: ModelMessage[];
  turns: string[];
}

/** What an `input` may be: which shapes a solver takes. */
export interface InputShapes {
  /** `{ turns: [...] }`, scripted user turns (false: refused). */
  turns: boolean;
}

type Parsed = { ok: true; conversation: ScriptedConversation } | { ok: false; problem: string };

/**
 * A sample's `input` as a conversation: a string is one user message; a list of messages
 * (`{ role, content }`, see MESSAGE_ROLES) is sent as given; `{ turns }` is a list of user
 * messages answered one after the other. Otherwise the problem, naming the field.
 *
 * @example parseConversation({ turns: ["hi", "and then?"] }, { turns: true })
 * // { ok: true, conversation: { messages: [{ role: "user", content: "hi" }], turns: ["and then?"] } }
 */
export function parseConversation(input: Json, shapes: InputShapes): Parsed {
  if (typeof input === "string") {
    return { ok: true, conversation: { messages: [{ role: "user", content: input }], turns: [] } };
  }
  if (Array.isArray(input)) {
    const problem = messagesProblem(input);
    if (problem !== undefined) return { ok: false, problem };
    return { ok: true, conversation: { messages: input as ModelMessage[], turns: [] } };
  }
  if (shapes.turns && isObject(input) && "turns" in input) return parseTurns(input);
  const expected = shapes.turns
    ? "a string, a list of messages { role, content } or { turns: [...] }"
    : "a string or a list of messages { role, content }";
  return { ok: false, problem: `input: expected ${expected}, got ${describeValue(input)}` };
}

/**
 * The problem with a sample's `input` for a solver that takes `shapes`, naming the field
 * (`input[1].role: …`), or undefined when it is good: what a solver's `checkInput` says.
 *
 * @example inputProblem([{ role: "bot", content: "hi" }], { turns: true })
 * // 'input[0].role: "bot" is not a message role (system, user, assistant, tool or developer)'
 */
export function inputProblem(input: Json, shapes: InputShapes): string | undefined {
  const parsed = parseConversation(input, shapes);
  return parsed.ok ? undefined : parsed.problem;
}

/**
 * The sample's conversation, the solver's `system` prepended unless its messages have one. A bad
 * input (which a loaded eval refuses before running) fails the sample as a `solver` error.
 */
export function conversationOf(
  sample: Sample,
  system: string | undefined,
  shapes: InputShapes,
): ScriptedConversation {
  const parsed = parseConversation(sample.input, shapes);
  if (!parsed.ok) throw new SolverError("solver", `sample "${sample.id}": ${parsed.problem}`);
  const { messages, turns } = parsed.conversation;
  if (system === undefined || messages.some((m) => m.role === "system")) {
    return { messages: [...messages], turns };
  }
  return { messages: [{ role: "system", content: system }, ...messages], turns };
}

function messagesProblem(list: Json[]): string | undefined {
  if (list.length === 0) return "input: an empty list of messages (it needs at least one)";
  for (const [index, message] of list.entries()) {
    const at = `input[${index}]`;
    if (!isObject(message)) {
      return `${at}: a message is an object { role, content }, got ${describeValue(message)}`;
    }
    const { role } = message;
    if (role === undefined) return `${at}.role: missing (a message is { role, content })`;
    if (!MESSAGE_ROLES.includes(role as (typeof MESSAGE_ROLES)[number])) {
      return `${at}.role: ${JSON.stringify(role)} is not a message role (system, user, assistant, tool or developer)`;
    }
    if (!("content" in message)) return `${at}.content: missing (a message is { role, content })`;
  }
  return undefined;
}

function parseTurns(input: { [key: string]: Json }): Parsed {
  const extra = Object.keys(input).find((key) => key !== "turns");
  if (extra !== undefined) {
    return {
      ok: false,
      problem: `input.${extra}: unknown field (scripted turns are { turns: [...] })`,
    };
  }
  const { turns } = input;
  if (!Array.isArray(turns) || turns.length === 0) {
    return {
      ok: false,
      problem: `input.turns: expected a non-empty list of user messages (strings), got ${describeValue(turns ?? null)}`,
    };
  }
  const bad = turns.findIndex((turn) => typeof turn !== "string");
  if (bad >= 0) {
    return {
      ok: false,
      problem: `input.turns[${bad}]: a turn is a string (the user's message), got ${describeValue(turns[bad]!)}`,
    };
  }
  const [first, ...rest] = turns as string[];
  return {
    ok: true,
    conversation: { messages: [{ role: "user", content: first! }], turns: rest },
  };
}

function isObject(value: Json): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A value as a problem names it: its JSON, cut short. */
function describeValue(value: Json): string {
  if (Array.isArray(value)) return "a list";
  if (isObject(value)) return "an object";
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
