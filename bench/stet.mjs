// The benchmark uses the built package's public API, as a user would.
export {
  defineEval,
  openSqliteStore,
  resolveEval,
  resumeRun,
  runEval,
  scorers,
  solvers,
  createSandbox,
} from "../dist/index.js";
export { openPostgresStore } from "../dist/postgres.js";
