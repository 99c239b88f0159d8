import type { Secret } from "../core/secrets.js";
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
  /**
   * Engine settings for the runs this server executes (`secrets`: redacted from their attempts;
   * `paged`: the dataset files its starts and resumes read a page at a time, see AppOptions).
   */
  engine: {
    staleMs?: number;
    heartbeatMs?: number;
    graceMs?: number;
    secrets?: Secret[];
    paged: { minBytes: number };
  };
  /** How often store-backed event streams look for news. */
  pollMs: number;
  log: (line: string) => void;
  /** Who a review that names no reviewer is by (`stet serve`'s `STET_REVIEWER`), if anyone. */
  reviewer?: string;
}
