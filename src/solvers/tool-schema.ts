import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import { StetError } from "../core/errors.js";
import type { Json } from "../core/json.js";

// One validator instance for every agent tool of the process: compiling is the costly part,
// and compiled validators are pure functions of their input. strict: false because tool
// schemas are written for models, with keywords (`examples`, vendor extensions) ajv does not
// know; addUsedSchema: false so two agents whose tools share a schema with an `$id` do not
// collide in the instance's registry.
let ajv: Ajv2020 | undefined;

/**
 * A validator of tool `name`'s arguments against its JSON Schema: null when they are valid,
 * else what is wrong with them, by JSON Pointer (what the model is told). A schema ajv cannot
 * compile is refused with `E_CONFIG` naming the tool. Loaded only by an agent's first check.
 *
 * @example compileToolSchema("add", { type: "object", required: ["a"] })({}) // "(root): must have required property 'a'"
 */
export function compileToolSchema(name: string, schema: Json): (args: Json) => string | null {
  ajv ??= new Ajv2020({ allErrors: true, strict: false, logger: false, addUsedSchema: false });
  // A draft-07 `$schema` would make the 2020-12 validator refuse a schema it checks as well.
  const { $schema: _dialect, ...rest } = schema as { [key: string]: Json };
  let validate: ReturnType<Ajv2020["compile"]>;
  try {
    validate = ajv.compile(rest);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new StetError(
      "E_CONFIG",
      `solvers.agent: tool "${name}": its parameters are not a valid JSON Schema: ${why}`,
    );
  }
  return (args) => (validate(args) ? null : describeErrors(validate.errors ?? []));
}

function describeErrors(errors: readonly ErrorObject[]): string {
  return errors
    .map(
      (error) =>
        `${error.instancePath === "" ? "(root)" : error.instancePath}: ${error.message ?? error.keyword}`,
    )
    .join("; ");
}
