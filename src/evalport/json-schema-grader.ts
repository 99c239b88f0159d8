import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { canonicalJson, type Json } from "../core/json.js";
import { parseJson } from "../scorers/json-match.js";

/**
 * The `json_schema` grader: 1 when the output, read as JSON, validates against `schema`, else 0
 * with the schema errors as the explanation. Without `strict`, a JSON value inside a ```json
 * fenced block is accepted (models often fence their JSON); with `strict: true` the whole
 * output must be JSON. Compiled schemas are cached per grader, by content.
 *
 * @example
 * const grade = jsonSchemaGrader();
 * grade('{"action":"search"}', { schema: { type: "object", required: ["action"] } }) // { value: 1 }
 */
export function jsonSchemaGrader(): (
  output: Json,
  params: { schema: Record<string, Json>; strict?: boolean },
) => { value: 0 | 1; explanation?: string } {
  // Its own instance: the schemas here are the suite author's, not EvalPort's.
  const ajv = new Ajv2020({ allErrors: true, strict: false, logger: false });
  addFormats.default(ajv);
  const compiled = new Map<string, ValidateFunction>();
  return (output, params) => {
    const key = canonicalJson(params.schema);
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(params.schema);
      compiled.set(key, validate);
    }
    const doc = typeof output !== "string" ? output : readJson(output, params.strict === true);
    if (doc === undefined) return { value: 0, explanation: "the output is not JSON" };
    if (validate(doc)) return { value: 1 };
    return { value: 0, explanation: ajv.errorsText(validate.errors, { dataVar: "output" }) };
  };
}

function readJson(text: string, strict: boolean): Json | undefined {
  if (!strict) return parseJson(text);
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}
