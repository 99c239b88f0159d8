import { StetError } from "./errors.js";
import type { RunStatus } from "./types.js";

/**
 * The legal status changes of a run. `running → running` is a takeover of a dead owner's run;
 * a finished run becomes running again when it is resumed.
 */
const transitions: Record<RunStatus, readonly RunStatus[]> = {
  running: ["running", "interrupted", "completed", "errored"],
  interrupted: ["running"],
  errored: ["running"],
  completed: ["running"],
};

/**
 * Throws unless a run may go from `from` to `to`.
 *
 * @example assertTransition("interrupted", "running"); // ok
 */
export function assertTransition(from: RunStatus, to: RunStatus): void {
  if (!transitions[from].includes(to)) {
    throw new StetError("E_ILLEGAL_TRANSITION", `a ${from} run cannot become ${to}`);
  }
}
