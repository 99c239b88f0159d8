import type { ConfigurationFault } from "../core/types.js";

/** How the engine classifies a failed attempt raised by a solver. */
export type SolverErrorType = "provider" | "timeout" | "solver";

/**
 * A solver failure the engine records as a typed error attempt. Any other thrown error is
 * recorded as type "solver". Messages name the endpoint or command, never a secret. A provider
 * error that no request to the endpoint would get past (nothing listening, an unknown host, a
 * 401/403/404) carries `configuration`; the engine stops a run whose first samples all fail
 * with the same one.
 *
 * @example throw new SolverError("provider", "POST http://x/v1/chat/completions: HTTP 503", { status: 503 });
 */
export class SolverError extends Error {
  override readonly name = "SolverError";
  readonly type: SolverErrorType;
  /** The HTTP status of the last response, for provider errors that had one. */
  readonly status: number | undefined;
  /** Set when the failure is the endpoint's configuration, not the sample (see ConfigurationFault). */
  readonly configuration: ConfigurationFault | undefined;

  constructor(
    type: SolverErrorType,
    message: string,
    options: { status?: number; configuration?: ConfigurationFault; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.type = type;
    this.status = options.status;
    this.configuration = options.configuration;
  }
}

/** True when `error` is a SolverError, optionally of the given type. */
export function isSolverError(error: unknown, type?: SolverErrorType): error is SolverError {
  return error instanceof SolverError && (type === undefined || error.type === type);
}
