import { agent } from "./agent.js";
import { chat } from "./chat.js";
import { command } from "./command.js";
import { conversation } from "./conversation.js";

/** The built-in solvers. Any `async (sample, ctx) => output` function is a solver too. */
export const solvers = { chat, command, agent, conversation };

export { agent, chat, command, conversation };
export { simulatedUser } from "./simulated-user.js";
export type { SimulatedUser, SimulatedUserOptions, StopWhen } from "./simulated-user.js";
export type { ConversationOptions } from "./conversation.js";
export type { AgentSolverOptions, OnToolError } from "./agent.js";
export type { AgentTool, AgentToolArgs, AgentToolContext, AgentTools } from "./agent-tools.js";
export type { ChatSolverOptions } from "./chat.js";
export type { CommandSolverOptions } from "./command.js";
export { chatCompletion, resolveEndpoint, redactUrl, DEFAULT_BASE_URL } from "./chat-completion.js";
export type { ChatCompletion, ChatEndpoint, ChatMessage, ChatRequest } from "./chat-completion.js";
export { defaultBackoff, parseRetryAfter, retryDelayMs } from "./backoff.js";
export type { Backoff } from "./backoff.js";
export { bareModel } from "./model-name.js";
export { PRICES_AS_OF, PRICES_SOURCE, costUsd, knownPrices, priceFor } from "./prices.js";
export type { Price, PriceTiers } from "./prices.js";
export { normalizeSolverReturn } from "../core/normalize.js";
export { SolverError, isSolverError } from "./solver-error.js";
export type { SolverErrorType } from "./solver-error.js";
