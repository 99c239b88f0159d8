import type { StetError } from "../core/errors.js";

/**
 * A failure's message as the CLI prints it: the library's message, and for the failures a user
 * meets on the first day, the command that gets them further. The library's messages stay plain
 * (the API sends them as they are, where `stet list` and `--store` mean nothing).
 *
 * @example withHint(new StetError("E_RUN_NOT_FOUND", 'no run with id "r_x" in .stet/stet.db'))
 * // 'no run with id "r_x" in .stet/stet.db; stet list shows the runs there, --store picks another store'
 */
export function withHint(error: StetError): string {
  const runId = error.details?.runId;
  switch (error.code) {
    case "E_RUN_NOT_FOUND":
      return `${error.message}; stet list shows the runs there, --store picks another store`;
    case "E_RUN_ACTIVE":
      // A claim refused because another process executes the run (it names the run); a cancel
      // refused by a server says where to cancel instead.
      return typeof runId === "string"
        ? `${error.message}; stet cancel ${runId} stops it`
        : error.message;
    default:
      return error.message;
  }
}
