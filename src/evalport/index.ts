/** `stet/evalport`: EvalPort suites, ResultSets, validation, merge and import. */
export { validateDocument } from "./validate-document.js";
export { validateFile } from "./validate-file.js";
export { isPartial } from "./is-partial.js";
export { formatValidationError } from "./format-validation-error.js";
export { loadSuite } from "./load-suite.js";
export { buildResultSet } from "./build-result-set.js";
export { toResult, fromResult } from "./result-mapping.js";
export { mergeResultSets } from "./merge-result-sets.js";
// The package's `stet/evalport` surface keeps `importResults`, which lives with the run lifecycle
// (it claims and settles a run); nothing inside evalport/ depends on runs/.
export { importResults } from "../runs/import-into-run.js";
export type { ImportOptions, ImportReport } from "../runs/import-into-run.js";
export type { MergeInput, MergeOptions, MergeConflict } from "./merge-result-sets.js";
