import { appendFile } from "node:fs/promises";
import type { Io } from "./io.js";

/**
 * In a GitHub Actions step (`$GITHUB_STEP_SUMMARY` names a file), appends the run's Markdown
 * summary there. A summary that cannot be written is a warning: the run's outcome stands.
 */
export async function appendStepSummary(io: Io, text: string): Promise<void> {
  const path = process.env.GITHUB_STEP_SUMMARY;
  if (!path) return;
  try {
    await appendFile(path, `${text}\n`);
  } catch (error) {
    io.stderr.write(
      `stet: warning: could not append to GITHUB_STEP_SUMMARY ${path}: ${String(error)}\n`,
    );
  }
}
