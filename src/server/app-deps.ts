import type { Store } from "../store/types.js";
import type { EvalRegistry } from "../runs/eval-registry.js";
import type { ExecutionRegistry } from "./executions.js";
import type { StreamSlots } from "./stream-slots.js";

/** What every route of one app shares. */
export interface AppDeps {
  store: Store;
  evals: EvalRegistry;
  executions: ExecutionRegistry;
  /** The cap on open event streams. */
  streams: StreamSlots;
  /** Strips known secrets from anything sent or logged. */
  redact: <T>(value: T) => T;
  /** Engine settings for the runs this server executes. */
  engine: { staleMs?: number; heartbeatMs?: number; graceMs?: number };
  /** How often store-backed event streams look for news. */
  pollMs: number;
  log: (line: string) => void;
}
