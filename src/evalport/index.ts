/** `stet/evalport`: EvalPort suites, ResultSets, validation, merge and import. */
export { validateDocument } from "./validate-document.js";
export { validateFile } from "./validate-file.js";
export { isPartial } from "./is-partial.js";
export { formatValidationError } from "./format-validation-error.js";
export { loadSuite } from "./load-suite.js";
export { buildResultSet } from "./build-result-set.js";
export { toResult, fromResult } from "./result-mapping.js";
export { mergeResultSets } from "./merge-result-sets.js";
export { importResults } from "./import-results.js";
export type { ImportOptions, ImportReport } from "./import-results.js";
export type { MergeInput, MergeOptions, MergeConflict } from "./merge-result-sets.js";
