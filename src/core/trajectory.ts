import type { Json } from "./json.js";
import type { ToolCall } from "./model-types.js";
import type { Usage } from "./types.js";

/**
 * One model call of an attempt, as its journal recorded it: the request's identity (`input`: the
 * model, messages, system, parameters and tools of a `ctx.chat` call; an AI SDK call's provider,
 * model and options) and the reply's text and tool calls.
 */
export interface TrajectoryModelCall {
  type: "model";
  /** The call's step number in the attempt's execution. */
  step: number;
  /** The model id the reply names (else the one requested); null when neither is known. */
  model: string | null;
  input: Json;
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage: Usage | null;
}

/** One `ctx.step` of an attempt: its name, input, and result or the message of what it threw. */
export interface TrajectoryToolStep {
  type: "step";
  step: number;
  name: string;
  input: Json;
  /** Null when the step threw. */
  result: Json;
  error: string | null;
}

export type TrajectoryEvent = TrajectoryModelCall | TrajectoryToolStep;

/** A tool call as the trajectory scorers count it: its name and arguments. */
export interface TrajectoryToolCall {
  name: string;
  arguments: Json;
}

/**
 * What a scorer gets of how the attempt reached its output, built from the attempt's step
 * journal: its model calls and its `ctx.step` steps in the order it made them (`events`), the
 * same split by type (`calls`, `steps`), and its tool calls (`toolCalls`): those of the model's
 * replies, in order, or, when no reply asked for a tool (an agent that only runs `ctx.step`s),
 * its steps named `tool:<name>` with their input as the arguments.
 *
 * Unknown (`known: false`, with the reason) when the attempt's journal is not there: the eval
 * journals nothing (`journal: false`), or the journal of a finished attempt was pruned (`journal:
 * { keep: "open" | "failed" }`, `--prune-journal`). Calls made with `{ journal: false }` are not
 * in it.
 */
export type Trajectory =
  | {
      known: true;
      events: readonly TrajectoryEvent[];
      calls: readonly TrajectoryModelCall[];
      steps: readonly TrajectoryToolStep[];
      toolCalls: readonly TrajectoryToolCall[];
    }
  | { known: false; reason: string };

/** What a trajectory is built from: a journal entry of the attempt, as the store holds it. */
export interface TrajectoryEntry {
  step: number;
  name: string;
  kind: "step" | "chat";
  input: Json;
  result: Json;
  error: { message: string } | null;
  usage: Usage | null;
}

/**
 * The trajectory of an attempt from its journal entries (in any order: sorted by step).
 *
 * @example trajectoryOf([{ step: 0, name: "tool:search", kind: "step", input: { q: "x" }, result: 3, error: null, usage: null }]).toolCalls // [{ name: "search", arguments: { q: "x" } }]
 */
export function trajectoryOf(entries: readonly TrajectoryEntry[]): Trajectory {
  const events = [...entries]
    .sort((a, b) => a.step - b.step)
    .map((e): TrajectoryEvent => (e.kind === "chat" ? modelCall(e) : toolStep(e)));
  const calls = events.filter((e): e is TrajectoryModelCall => e.type === "model");
  const steps = events.filter((e): e is TrajectoryToolStep => e.type === "step");
  const asked = calls.flatMap((c) =>
    c.toolCalls.map((t) => ({ name: t.name, arguments: t.arguments })),
  );
  const toolCalls =
    asked.length > 0
      ? asked
      : steps
          .filter((s) => s.name.startsWith("tool:"))
          .map((s) => ({ name: s.name.slice("tool:".length), arguments: s.input }));
  // Every scorer of the attempt gets the same arrays: one that sorts its copy must not reorder
  // the next one's.
  return {
    known: true,
    events: Object.freeze(events),
    calls: Object.freeze(calls),
    steps: Object.freeze(steps),
    toolCalls: Object.freeze(toolCalls),
  };
}

function toolStep(e: TrajectoryEntry): TrajectoryToolStep {
  return {
    type: "step",
    step: e.step,
    name: e.name,
    input: e.input,
    result: e.result,
    error: e.error?.message ?? null,
  };
}

/** A chat entry: a `ctx.chat` reply, or an AI SDK `doGenerate` result or `doStream` parts. */
function modelCall(e: TrajectoryEntry): TrajectoryModelCall {
  const result = record(e.result);
  const input = record(e.input);
  const reply =
    e.name === "ai-sdk.generate" || e.name === "ai-sdk.stream"
      ? languageModelReply(result)
      : {
          content: typeof result.content === "string" ? result.content : "",
          toolCalls: Array.isArray(result.toolCalls) ? result.toolCalls.flatMap(toolCallOf) : [],
          finishReason: typeof result.finishReason === "string" ? result.finishReason : null,
        };
  const named = [result.model, record(result.response).modelId, input.model];
  const model = named.find((m): m is string => typeof m === "string") ?? null;
  return { type: "model", step: e.step, model, input: e.input, ...reply, usage: e.usage };
}

function toolCallOf(value: Json): ToolCall[] {
  const call = record(value);
  if (typeof call.name !== "string") return [];
  return [
    {
      id: typeof call.id === "string" ? call.id : "",
      name: call.name,
      arguments: call.arguments ?? null,
    },
  ];
}

/** The text and tool calls of an AI SDK result: `content` parts (generate) or stream `parts`. */
function languageModelReply(result: Record<string, Json>) {
  const parts = Array.isArray(result.content)
    ? result.content
    : Array.isArray(result.parts)
      ? result.parts
      : [];
  let content = "";
  const toolCalls: ToolCall[] = [];
  for (const value of parts) {
    const part = record(value);
    if (part.type === "text" && typeof part.text === "string") content += part.text;
    if (part.type === "text-delta" && typeof part.delta === "string") content += part.delta;
    if (part.type === "tool-call" && typeof part.toolName === "string") {
      toolCalls.push({
        id: typeof part.toolCallId === "string" ? part.toolCallId : "",
        name: part.toolName,
        arguments: parsedArguments(part.input ?? part.args ?? null),
      });
    }
  }
  const given =
    result.finishReason ?? parts.map(record).find((p) => p.type === "finish")?.finishReason;
  // V3 models give `{ unified, raw }`; V2 a string.
  const finish = typeof given === "string" ? given : record(given).unified;
  return { content, toolCalls, finishReason: typeof finish === "string" ? finish : null };
}

/** An AI SDK tool call's input is JSON text: parsed, or the text when it is not JSON. */
function parsedArguments(input: Json): Json {
  if (typeof input !== "string") return input;
  try {
    return JSON.parse(input) as Json;
  } catch {
    return input;
  }
}

function record(value: Json | undefined): Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
}
