import { type ValidationError, isObject } from "./validation-types.js";

/** The EvalPort major version stet reads and writes. */
export const SUPPORTED_MAJOR_VERSION = 1;

/**
 * SPEC "Compatibility Policy": a document whose major `version` is higher than the runner's
 * must be rejected; higher minor versions are accepted. The semver pattern itself is the
 * schema's to check.
 *
 * @example versionErrors({ version: "2.0.0" }) // [{ path: "/version", code: "version.unsupported", ... }]
 */
export function versionErrors(doc: unknown): ValidationError[] {
  if (!isObject(doc) || typeof doc.version !== "string") return [];
  const major = /^(\d+)\./.exec(doc.version)?.[1];
  if (major === undefined || Number(major) <= SUPPORTED_MAJOR_VERSION) return [];
  return [
    {
      path: "/version",
      code: "version.unsupported",
      message: `Unsupported EvalPort major version: ${doc.version}. Supported: ${SUPPORTED_MAJOR_VERSION}.x`,
    },
  ];
}
