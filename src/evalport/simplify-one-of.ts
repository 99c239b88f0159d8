import type { AnySchemaObject, ErrorObject } from "ajv/dist/2020.js";
import { isObject } from "./validation-types.js";

/**
 * Ajv reports a failed `oneOf` as the failure of every branch plus "must match exactly one
 * schema". For branches told apart by JSON type (`input: string | string[]`, a grader given as
 * an id or an inline object) that is noise: this keeps the errors of the branch whose type the
 * data has, or, when no branch's type fits, one `type` error naming every allowed type.
 * Errors of other `oneOf`s (no `type` per branch) are left as Ajv gave them.
 *
 * @example simplifyOneOf(validate.errors ?? [], (ref) => ajv.getSchema(ref)?.schema)
 */
export function simplifyOneOf(
  errors: ErrorObject[],
  resolveRef: (ref: string) => AnySchemaObject | undefined,
): ErrorObject[] {
  let out = errors;
  for (const oneOf of errors) {
    if (oneOf.keyword !== "oneOf" || oneOf.params.passingSchemas !== null) continue;
    if (!Array.isArray(oneOf.schema)) continue;
    const branchTypes = oneOf.schema.map((branch: unknown) => typesOf(branch, resolveRef));
    if (branchTypes.some((t) => t === undefined)) continue;
    const types = branchTypes as string[][];
    const isBranchTypeError = (e: ErrorObject) =>
      e.keyword === "type" &&
      e.instancePath === oneOf.instancePath &&
      (e.schemaPath.startsWith(`${oneOf.schemaPath}/`) || !e.schemaPath.startsWith("#"));
    out = out.filter((e) => e !== oneOf && !isBranchTypeError(e));
    if (!types.some((t) => t.some((type) => hasType(oneOf.data, type)))) {
      out.push({
        ...oneOf,
        keyword: "type",
        params: { type: [...new Set(types.flat())].join(",") },
      });
    }
  }
  return out;
}

function typesOf(
  branch: unknown,
  resolveRef: (ref: string) => AnySchemaObject | undefined,
): string[] | undefined {
  if (!isObject(branch)) return undefined;
  const schema = typeof branch.$ref === "string" ? resolveRef(branch.$ref) : branch;
  const type: unknown = schema?.type;
  if (typeof type === "string") return [type];
  if (Array.isArray(type) && type.every((t) => typeof t === "string")) return type;
  return undefined;
}

function hasType(data: unknown, type: string): boolean {
  switch (type) {
    case "null":
      return data === null;
    case "array":
      return Array.isArray(data);
    case "object":
      return isObject(data);
    case "integer":
      return Number.isInteger(data);
    default:
      return typeof data === type;
  }
}
