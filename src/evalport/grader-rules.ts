import { evalportAjv } from "./schema-validators.js";
import { type ValidationError, isObject, pointer } from "./validation-types.js";

/**
 * SPEC "Type-Specific Grader Validation" checks the schema cannot express: an `llm_judge`
 * prompt must contain `{output}`, `{input}` or `{expected}`; a `regex` pattern must compile; a
 * `json_schema` schema must be a valid JSON Schema; a `json_path` path must start at `$`.
 * Missing or mistyped params are the schema's to report and are skipped here.
 *
 * @example graderRuleErrors({ id: "j", type: "llm_judge", params: { model: "m", prompt: "Rate it" } }, "/graders/0")
 * // [{ path: "/graders/0/params/prompt", code: "grader.prompt_without_placeholder", ... }]
 */
export function graderRuleErrors(grader: unknown, path: string): ValidationError[] {
  if (!isObject(grader) || !isObject(grader.params)) return [];
  const params = grader.params;
  const at = (name: string) => pointer(path, "params", name);
  switch (grader.type) {
    case "llm_judge": {
      const prompt = params.prompt;
      if (typeof prompt !== "string" || /\{(output|input|expected)\}/.test(prompt)) return [];
      return [
        {
          path: at("prompt"),
          code: "grader.prompt_without_placeholder",
          message: "an llm_judge prompt must contain {output}, {input} or {expected}",
        },
      ];
    }
    case "regex": {
      const problem = typeof params.pattern === "string" ? regexProblem(params.pattern) : undefined;
      return problem
        ? [{ path: at("pattern"), code: "grader.invalid_regex", message: problem }]
        : [];
    }
    case "json_schema": {
      const problem = isObject(params.schema) ? jsonSchemaProblem(params.schema) : undefined;
      return problem
        ? [{ path: at("schema"), code: "grader.invalid_json_schema", message: problem }]
        : [];
    }
    case "json_path":
      return typeof params.path === "string" && !params.path.startsWith("$")
        ? [
            {
              path: at("path"),
              code: "grader.invalid_json_path",
              message: `a JSONPath must start with "$", got ${JSON.stringify(params.path)}`,
            },
          ]
        : [];
    default:
      return [];
  }
}

/**
 * The spec says RE2 syntax; JavaScript's RegExp is the closest engine at hand. RE2's leading
 * inline flags (`(?i)`) are not JavaScript syntax, so they are set aside before compiling; a
 * pattern JavaScript accepts but RE2 would not (look-behind, back-references) passes.
 */
function regexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern.replace(/^\(\?[imsU]+\)/, ""));
    return undefined;
  } catch (error) {
    return `pattern does not compile: ${(error as Error).message}`;
  }
}

function jsonSchemaProblem(schema: Record<string, unknown>): string | undefined {
  const ajv = evalportAjv();
  // Only the 2020-12 meta-schema is loaded; a schema that names another draft is not judged.
  const declared = schema.$schema;
  if (declared !== undefined && declared !== "https://json-schema.org/draft/2020-12/schema") {
    return undefined;
  }
  if (ajv.validateSchema(schema) === true) return undefined;
  return `not a valid JSON Schema: ${ajv.errorsText(ajv.errors, { dataVar: "schema" })}`;
}
