import type { ValidationError } from "./validation-types.js";

/**
 * One line for people: where (`file:line:column`, then the JSON Pointer), what, and the code.
 *
 * @example formatValidationError({ file: "r.json", path: "/started_at", code: "schema.format", message: "must be ..." })
 * // 'r.json: /started_at: must be ... [schema.format]'
 */
export function formatValidationError(error: ValidationError): string {
  const place = [error.file, error.line, error.column].filter((p) => p !== undefined).join(":");
  const where = [place, error.path].filter((p) => p !== "").join(": ");
  return `${where === "" ? "" : `${where}: `}${error.message} [${error.code}]`;
}
