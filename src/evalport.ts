/** `stet/evalport`: EvalPort suites, ResultSets, validation, merge and import. */
export { validateDocument } from "./evalport/validate-document.js";
export { validateFile } from "./evalport/validate-file.js";
export { isPartial } from "./evalport/is-partial.js";
export { formatValidationError } from "./evalport/format-validation-error.js";
export { loadSuite } from "./evalport/load-suite.js";
export { buildResultSet } from "./evalport/build-result-set.js";
export { toResult, fromResult } from "./evalport/result-mapping.js";
export { mergeResultSets } from "./evalport/merge-result-sets.js";
// An entry outside the layers (as src/index.ts is): it may gather `importResults` from the run
// lifecycle (it claims and settles a run) beside the format's own functions.
export { importResults } from "./runs/import-into-run.js";
export type { ImportOptions, ImportReport } from "./runs/import-into-run.js";
export type { MergeInput, MergeOptions, MergeConflict } from "./evalport/merge-result-sets.js";
