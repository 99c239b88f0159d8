/** stet's public library surface. */
export { defineEval } from "./eval/define-eval.js";
export { loadEvalFile } from "./eval/load-eval-file.js";
export { resolveEval } from "./eval/resolve-eval.js";
export type { EvalDefinition, Eval, DatasetRow, SampleInput } from "./eval/types.js";
export { simulatedUser, solvers } from "./solvers/index.js";
export { SolverError, chatCompletion } from "./solvers/index.js";
export { PRICES_AS_OF, PRICES_SOURCE, knownPrices } from "./solvers/index.js";
export { scorers, ScorerError } from "./scorers/index.js";
export type { CodeOptions } from "./scorers/index.js";
export type {
  AgentSolverOptions,
  AgentTool,
  AgentToolArgs,
  AgentToolContext,
  AgentTools,
  ConversationOptions,
  OnToolError,
  SimulatedUser,
  SimulatedUserOptions,
  StopWhen,
} from "./solvers/index.js";
export { createSandbox, sandboxed } from "./sandbox/index.js";
export type {
  ExecRequest,
  ExecResult,
  Sandbox,
  SandboxConfig,
  SandboxLimits,
} from "./sandbox/index.js";
export { runEval } from "./runs/start-run.js";
export { resumeRun } from "./runs/resume-run.js";
export { evalIdentity } from "./runs/eval-identity.js";
export { compareIdentity } from "./runs/run-identity.js";
export type { RunEvalOptions } from "./runs/start-run.js";
export type { ResumeOptions } from "./runs/resume-run.js";
export type { EngineEval } from "./core/eval.js";
export { openSqliteStore } from "./store/sqlite/index.js";
export type { Store } from "./store/types.js";
export { StetError, isStetError } from "./core/errors.js";
export { LimitReached, isLimitReached } from "./core/limits.js";
export type { AttemptLimit, LimitName, SampleLimits } from "./core/limits.js";
export type { StetErrorCode } from "./core/errors.js";
export type { RunEvent, RunReport, Progress } from "./core/events.js";
export type {
  Sample,
  Score,
  Usage,
  UsageFigures,
  Price,
  PriceTiers,
  Attempt,
  AttemptError,
  ConfigurationFault,
  Run,
  RunStatus,
  Reducer,
  RunIdentity,
  RunHistoryEntry,
  IdentityDifference,
} from "./core/types.js";
export type {
  SolverFn,
  SolverContext,
  ModelCall,
  ModelReply,
  ModelMessage,
  ModelTool,
  ToolCall,
  ToolChoice,
  FinishReason,
  ProviderName,
  SolverResult,
  Scorer,
  ScorerArgs,
  ScoreValue,
  Trajectory,
  TrajectoryEvent,
  TrajectoryModelCall,
  TrajectoryToolCall,
  TrajectoryToolStep,
} from "./core/eval.js";
export type { Json } from "./core/json.js";
