/** The dataset loader's JSON checks: core's schemas, under the names the loader uses. */
export { jsonSchema as jsonValueSchema, jsonObjectSchema } from "../core/json.js";
