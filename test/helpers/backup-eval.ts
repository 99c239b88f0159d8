import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { expect } from "vitest";
import type { CliResult } from "./cli.js";

/**
 * The eval the backup tests run: SAMPLES samples (default 20), a third answered wrong, each
 * solved after PAUSE_MS, so a long run is still writing while a backup is taken.
 */
export const BACKUP_EVAL = `import { defineEval } from "stet";
const n = Number(process.env.SAMPLES ?? 20);
const pause = Number(process.env.PAUSE_MS ?? 0);
export default defineEval({
  name: "backup-eval",
  dataset: Array.from({ length: n }, (_, i) => ({ id: "s" + String(i).padStart(3, "0"), input: String(i), target: String(i % 3 === 0 ? -1 : i) })),
  solver: async (sample) => {
    if (pause) await new Promise((r) => setTimeout(r, pause));
    return { output: String(sample.input), usage: { inputTokens: 5, outputTokens: 1, costUsd: 0.001 } };
  },
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

/** The sha256 of a file's bytes, as `stet backup` prints it. */
export function sha256Of(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/**
 * Every run's jsonl, resultset and csv export from `store`, through the CLI: two stores whose
 * lists are equal export every run byte for byte the same.
 */
export async function exportsOf(
  cli: (args: string[]) => Promise<CliResult>,
  runs: readonly string[],
  store: string,
): Promise<string[]> {
  const out: string[] = [];
  for (const id of runs) {
    for (const format of ["jsonl", "resultset", "csv"]) {
      const result = await cli(["export", id, "--format", format, "--store", store]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      out.push(result.stdout);
    }
  }
  return out;
}
