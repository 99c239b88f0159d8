import {
  Ajv2020,
  type AnySchemaObject,
  type ErrorObject,
  type ValidateFunction,
} from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import graderSchema from "./schemas/grader.json" with { type: "json" };
import resultsetSchema from "./schemas/resultset.json" with { type: "json" };
import suiteSchema from "./schemas/suite.json" with { type: "json" };
import testcaseSchema from "./schemas/testcase.json" with { type: "json" };
import { simplifyOneOf } from "./simplify-one-of.js";
import { type DocumentKind, type ValidationError, isObject, pointer } from "./validation-types.js";

const BASE = "https://evalport.org/schema/";
const SCHEMA_REFS: Record<DocumentKind, string> = {
  resultset: `${BASE}resultset.json`,
  suite: `${BASE}suite.json`,
  testcase: `${BASE}testcase.json`,
  grader: `${BASE}grader.json`,
  result: `${BASE}resultset.json#/properties/results/items`,
};

// Compiled once, on first use: compiling the four schemas costs tens of milliseconds and the
// validators are pure functions of their input, so sharing them is safe.
let ajv: Ajv2020 | undefined;
const validators = new Map<DocumentKind, ValidateFunction>();

/** The shared Ajv instance with the EvalPort schemas and RFC 3339 `date-time` checking. */
export function evalportAjv(): Ajv2020 {
  if (ajv) return ajv;
  // verbose: errors carry the failing data and schema, used for messages and oneOf pruning.
  // strict: false because the spec's schemas use `properties` inside if/then without `type`.
  const instance = new Ajv2020({ allErrors: true, verbose: true, strict: false, logger: false });
  addFormats.default(instance);
  for (const schema of [graderSchema, testcaseSchema, suiteSchema, resultsetSchema]) {
    instance.addSchema(schema);
  }
  ajv = instance;
  return instance;
}

/**
 * JSON Schema violations of `doc` as a document of `kind`, with JSON Pointer paths.
 *
 * @example schemaErrors("testcase", { id: "t", input: "", graders: ["g"] })
 * // [{ path: "/input", code: "schema.minLength", message: "must NOT have fewer than 1 characters, got \"\"" }]
 */
export function schemaErrors(kind: DocumentKind, doc: unknown): ValidationError[] {
  let validate = validators.get(kind);
  if (!validate) {
    validate = evalportAjv().getSchema(SCHEMA_REFS[kind]);
    if (!validate) throw new Error(`EvalPort schema ${SCHEMA_REFS[kind]} is not registered`);
    validators.set(kind, validate);
  }
  if (validate(doc)) return [];
  let raw = (validate.errors ?? []).filter((e) => e.keyword !== "if");
  if (kind === "suite") raw = raw.filter((e) => !isSuiteSourceError(e));
  const seen = new Set<string>();
  return simplifyOneOf(raw, resolveRef)
    .flatMap(toValidationErrors)
    .filter((e) => {
      const key = `${e.path}\0${e.code}\0${e.message}`;
      return seen.has(key) ? false : (seen.add(key), true);
    });
}

function resolveRef(ref: string): AnySchemaObject | undefined {
  const schema = evalportAjv().getSchema(ref)?.schema;
  return isObject(schema) ? schema : undefined;
}

/**
 * suite.json lists `test_cases` as required *and* says `oneOf: [test_cases, test_cases_file]`;
 * the spec's JSONL example has a suite with only `test_cases_file`. stet follows the intent and
 * checks "exactly one of the two" itself (suite rules), so these schema errors are dropped.
 */
function isSuiteSourceError(e: ErrorObject): boolean {
  if (e.instancePath !== "") return false;
  if (e.schemaPath === "#/oneOf" || e.schemaPath.startsWith("#/oneOf/")) return true;
  return e.keyword === "required" && e.params.missingProperty === "test_cases";
}

function toValidationErrors(e: ErrorObject): ValidationError[] {
  const code = `schema.${e.keyword}`;
  if (e.keyword === "required") {
    const missing = String(e.params.missingProperty);
    return requiredPaths(e.parentSchema, missing).map((names) => ({
      path: pointer(e.instancePath, ...names),
      code,
      message: `must have required property '${names.join(".")}'`,
    }));
  }
  if (e.keyword === "additionalProperties") {
    const extra = String(e.params.additionalProperty);
    return [{ path: pointer(e.instancePath, extra), code, message: `unknown property '${extra}'` }];
  }
  return [{ path: e.instancePath, code, message: describe(e) }];
}

/**
 * A missing object whose own schema requires members is reported at those members, so that
 * `{ type: "custom" }` without `params` names `/params/handler`, the field the user must add.
 */
function requiredPaths(parent: unknown, missing: string): string[][] {
  const properties = isObject(parent) ? parent.properties : undefined;
  const nested = isObject(properties) ? properties[missing] : undefined;
  const required = isObject(nested) && Array.isArray(nested.required) ? nested.required : [];
  const names = required.filter((n): n is string => typeof n === "string");
  return names.length === 0 ? [[missing]] : names.map((n) => [missing, n]);
}

function describe(e: ErrorObject): string {
  const message = e.message ?? `fails ${e.keyword}`;
  switch (e.keyword) {
    case "type":
      return `must be ${String(e.params.type).split(",").join(" or ")}${got(e.data)}`;
    case "format":
      return e.params.format === "date-time"
        ? `must be an RFC 3339 date-time with a UTC offset, e.g. 2026-01-15T10:30:00Z${got(e.data)}`
        : `${message}${got(e.data)}`;
    case "enum":
      return `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}${got(e.data)}`;
    case "const":
      return `must be ${JSON.stringify(e.params.allowedValue)}${got(e.data)}`;
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
    case "minLength":
      return `${message}${got(e.data)}`;
    case "pattern":
      // The only patterns in the spec's schemas are the semver ones on `version`.
      return e.instancePath.endsWith("/version")
        ? `must be a semantic version (MAJOR.MINOR.PATCH, e.g. "1.0.0")${got(e.data)}`
        : `${message}${got(e.data)}`;
      return `${message}${got(e.data)}`;
    default:
      return message;
  }
}

function got(data: unknown): string {
  if (data === null || ["string", "number", "boolean"].includes(typeof data)) {
    const text = JSON.stringify(data);
    return `, got ${text.length > 60 ? `${text.slice(0, 57)}...` : text}`;
  }
  return `, got ${Array.isArray(data) ? "an array" : "an object"}`;
}
