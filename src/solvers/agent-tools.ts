import * as z from "zod";
import { StetError } from "../core/errors.js";
import type { SolverContext } from "../core/eval.js";
import type { Json } from "../core/json.js";
import type { ModelTool } from "../core/model-types.js";
import type { Sample } from "../core/types.js";

/** A JSON object: a tool's JSON Schema, or the arguments of a tool whose schema is JSON Schema. */
export type JsonObject = { [key: string]: Json };

/** What `execute` receives: a zod schema's parsed output, else the arguments as JSON. */
export type AgentToolArgs<A> = unknown extends A ? JsonObject : A;

/**
 * What a tool's `execute` is given besides its arguments: the attempt's context, the sample and
 * the id of the call it answers. The tool's result is journaled as one step, so `ctx.step` and
 * `ctx.chat` inside it run unjournaled (a replayed tool never runs them), and
 * `ctx.languageModel` is refused.
 */
export interface AgentToolContext extends SolverContext {
  sample: Sample;
  toolCallId: string;
}

/**
 * One tool of `solvers.agent`, as in the AI SDK: `parameters` is a JSON Schema (an object), or a
 * zod 4 schema whose parsed output `execute` receives. Its result goes back to the model as the
 * tool message's content (a string as it is, anything else as JSON text).
 */
export interface AgentTool<A = unknown> {
  description?: string;
  parameters: JsonObject | z.ZodType<A>;
  execute(args: AgentToolArgs<A>, ctx: AgentToolContext): unknown;
}

/** Tools keyed by name; each one's argument type is inferred from its zod schema. */
export type AgentTools<T> = { [K in keyof T]: AgentTool<T[K]> };

/** How a call's arguments were judged: the arguments `execute` gets, or what is wrong with them. */
export type CheckedArgs = { ok: true; args: unknown } | { ok: false; problem: string };

/** A tool ready for the loop: the JSON Schema the model sees and how its arguments are checked. */
export interface PreparedTool {
  name: string;
  description?: string;
  schema: JsonObject;
  check(args: Json): Promise<CheckedArgs>;
  execute(args: unknown, ctx: AgentToolContext): unknown;
}

/** The part of a zod 4 schema stet uses, told by shape: the eval may bring its own copy of zod. */
interface ZodLike {
  _zod: unknown;
  safeParseAsync(value: unknown): Promise<ZodResult>;
  toJSONSchema?: (params?: { io?: "input" | "output" }) => unknown;
}
type ZodResult =
  | { success: true; data: unknown }
  | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function isZod(value: unknown): value is ZodLike {
  return (
    isObject(value) &&
    "_zod" in value &&
    typeof (value as { safeParseAsync?: unknown }).safeParseAsync === "function"
  );
}

/**
 * The tools of `solvers.agent` checked and made ready, in their names' order (so the tools the
 * model is sent, and the run's description, do not depend on how the object was written). A
 * malformed tool is refused with `E_CONFIG` naming it.
 *
 * @example prepareTools({ add: { parameters: { type: "object" }, execute: () => 1 } })[0].name // "add"
 */
export function prepareTools(tools: Record<string, AgentTool<never>>): PreparedTool[] {
  if (!isObject(tools) || Object.keys(tools).length === 0) {
    throw new StetError(
      "E_CONFIG",
      "solvers.agent needs `tools`: an object of tools keyed by name",
    );
  }
  return Object.keys(tools)
    .sort()
    .map((name) => prepareTool(name, tools[name] as AgentTool<never>));
}

function prepareTool(name: string, tool: AgentTool<never>): PreparedTool {
  const where = `solvers.agent: tool "${name}"`;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new StetError(
      "E_CONFIG",
      `${where}: a tool's name is 1 to 64 letters, digits, "_" or "-" (what providers accept)`,
    );
  }
  if (!isObject(tool) || typeof tool.execute !== "function") {
    throw new StetError("E_CONFIG", `${where} needs an \`execute(args, ctx)\` function`);
  }
  if (tool.description !== undefined && typeof tool.description !== "string") {
    throw new StetError("E_CONFIG", `${where}: \`description\` must be a string`);
  }
  const { parameters } = tool;
  const prepared = isZod(parameters)
    ? zodTool(where, parameters)
    : jsonSchemaTool(where, name, parameters);
  return {
    name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    ...prepared,
    execute: (args, ctx) => tool.execute(args as never, ctx),
  };
}

function zodTool(where: string, schema: ZodLike): Pick<PreparedTool, "schema" | "check"> {
  let json: unknown;
  try {
    // The schema's own method where it has one (zod ≥ 4.1), so another copy of zod converts it.
    json = schema.toJSONSchema
      ? schema.toJSONSchema({ io: "input" })
      : z.toJSONSchema(schema as never, { io: "input" });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new StetError("E_CONFIG", `${where}: its zod schema has no JSON Schema form: ${why}`);
  }
  return {
    schema: withoutDialect(json as JsonObject),
    check: async (args) => {
      const parsed = await schema.safeParseAsync(args);
      if (parsed.success) return { ok: true, args: parsed.data };
      const problems = parsed.error.issues.map(
        (issue) =>
          `${issue.path.length === 0 ? "(root)" : issue.path.map(String).join(".")}: ${issue.message}`,
      );
      return { ok: false, problem: problems.join("; ") };
    },
  };
}

function jsonSchemaTool(
  where: string,
  name: string,
  parameters: unknown,
): Pick<PreparedTool, "schema" | "check"> {
  if (!isObject(parameters)) {
    throw new StetError(
      "E_CONFIG",
      `${where}: \`parameters\` must be a JSON Schema (an object) or a zod 4 schema`,
    );
  }
  if ("_def" in parameters && typeof parameters.safeParse === "function") {
    throw new StetError(
      "E_CONFIG",
      `${where}: \`parameters\` is a zod 3 schema; stet takes zod 4 schemas (zod 4, or "zod/v4")`,
    );
  }
  const schema = parameters as JsonObject;
  let validate: ((args: Json) => string | null) | undefined;
  return {
    schema,
    check: async (args) => {
      // ajv is loaded on the first check: an eval without an agent never loads it (start-up).
      validate ??= (await import("./tool-schema.js")).compileToolSchema(name, schema);
      const problem = validate(args);
      return problem === null ? { ok: true, args } : { ok: false, problem };
    },
  };
}

/** `$schema` names the dialect for a validator; a model's API has no use for it (some refuse it). */
function withoutDialect(schema: JsonObject): JsonObject {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/**
 * The tools as a model call sends them.
 *
 * @example modelTools(prepared) // [{ name: "add", description: "a + b", parameters: { type: "object", … } }]
 */
export function modelTools(tools: readonly PreparedTool[]): ModelTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    parameters: tool.schema,
  }));
}
