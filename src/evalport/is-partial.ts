import { type ValidationError, isObject, pointer } from "./validation-types.js";

/**
 * True when a ResultSet declares that it covers only part of its suite: `metadata.openeval.
 * partial === true` (the nested form stet and the reference runner write), or the dotted key
 * `metadata["openeval.partial"] === true` (the spec's prose form, accepted on input). Either
 * one set to `true` wins, so a document is never taken for complete by mistake.
 *
 * @example isPartial({ metadata: { openeval: { partial: true } } }) // true
 * @example isPartial({ metadata: { "openeval.partial": true } }) // true
 */
export function isPartial(resultSet: unknown): boolean {
  return partialFlags(resultSet).some((flag) => flag.value === true);
}

/**
 * `openeval.partial` is a reserved key with a boolean value; a non-boolean, or the two spellings
 * disagreeing, makes "is this run complete?" unanswerable, so both are validation errors.
 */
export function partialFlagErrors(resultSet: unknown): ValidationError[] {
  const flags = partialFlags(resultSet);
  const errors: ValidationError[] = flags
    .filter((flag) => typeof flag.value !== "boolean")
    .map((flag) => ({
      path: flag.path,
      code: "resultset.partial_not_boolean",
      message: `openeval.partial must be true or false, got ${JSON.stringify(flag.value)}`,
    }));
  const [nested, dotted] = flags;
  if (flags.length === 2 && errors.length === 0 && nested?.value !== dotted?.value) {
    errors.push({
      path: dotted?.path ?? "",
      code: "resultset.partial_conflict",
      message: `metadata["openeval.partial"] (${String(dotted?.value)}) contradicts metadata.openeval.partial (${String(nested?.value)})`,
    });
  }
  return errors;
}

function partialFlags(resultSet: unknown): Array<{ path: string; value: unknown }> {
  const metadata = isObject(resultSet) ? resultSet.metadata : undefined;
  if (!isObject(metadata)) return [];
  const flags: Array<{ path: string; value: unknown }> = [];
  if (isObject(metadata.openeval) && "partial" in metadata.openeval) {
    flags.push({ path: "/metadata/openeval/partial", value: metadata.openeval.partial });
  }
  if ("openeval.partial" in metadata) {
    flags.push({
      path: pointer("/metadata", "openeval.partial"),
      value: metadata["openeval.partial"],
    });
  }
  return flags;
}
