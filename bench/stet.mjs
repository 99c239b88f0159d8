// The benchmark uses the built package, as a user would.
export { openSqliteStore, runEval, resumeRun } from "../dist/index.js";
export { fingerprintSample } from "../dist/core/fingerprint.js";
