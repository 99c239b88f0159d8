import type { StetErrorCode } from "../core/errors.js";
import type { RunStatus } from "../core/types.js";

/** The CLI's exit codes (the "Exit codes" table of docs/runs-and-resume.md). */
export const EXIT = {
  ok: 0,
  fatal: 1,
  usage: 2,
  errored: 3,
  belowThreshold: 4,
  runActive: 5,
  /** The spend cap (`--max-cost`) stopped the run; it is interrupted and resumable. */
  budget: 6,
  /** `--baseline` found no run to compare with (`E_NO_BASELINE`). */
  noBaseline: 7,
  interrupted: 130,
} as const;

/** The exit code for a run that ended with `status`. */
export function exitCodeForStatus(status: RunStatus): number {
  switch (status) {
    case "completed":
      return EXIT.ok;
    case "errored":
      return EXIT.errored;
    case "interrupted":
      return EXIT.interrupted;
    case "running":
      return EXIT.fatal;
  }
}

/** The exit code for a failure with a stable code. */
export function exitCodeForError(code: StetErrorCode): number {
  switch (code) {
    case "E_USAGE":
    case "E_EVAL_NOT_FOUND":
    case "E_DIFFERENT_EVALS":
    case "E_BASELINE_MISMATCH":
      return EXIT.usage;
    case "E_NO_BASELINE":
      return EXIT.noBaseline;
    // E_FENCED: another process took the run over from this one (which had stopped heartbeating),
    // so the run is owned by a live process, as for a refused resume.
    case "E_RUN_ACTIVE":
    case "E_FENCED":
      return EXIT.runActive;
    // The run is interrupted (resumable), but nothing will resume it until the endpoint is fixed.
    case "E_ENDPOINT":
      return EXIT.fatal;
    default:
      return EXIT.fatal;
  }
}
