import { once } from "node:events";
import { removeStreamingTemps, writeStreamAtomic } from "../durable/write-file-atomic.js";
import { prepareOutputFile } from "./output-file.js";

/** Writes a piece of the output, waiting while the destination is full. */
export type Write = (text: string) => Promise<void>;

/**
 * Runs `body` with a writer to stdout, or to `output` (`-o`): a temporary file beside it, synced
 * and renamed over it only once `body` finished (`writeStreamAtomic`), so a failure or a kill
 * leaves the old file (or none) and never a part of the export. Each write waits for the
 * destination, so memory holds one piece at a time however long the export. Interrupted by
 * SIGINT or SIGTERM (Ctrl-C), the temporary file is removed before the process ends on the
 * signal; one SIGKILL leaves is removed by a later write of the same file (`removeStaleTemps`).
 *
 * @example await toOutput("out/run.jsonl", async (write) => { await write("{}\n"); });
 */
export async function toOutput(
  output: string | undefined,
  body: (write: Write) => Promise<void>,
): Promise<void> {
  if (output === undefined) {
    await body(async (text) => {
      if (!process.stdout.write(text)) await once(process.stdout, "drain");
    });
    return;
  }
  await prepareOutputFile(output, "-o");
  const signals = ["SIGINT", "SIGTERM"] as const;
  const interrupted = (signal: NodeJS.Signals) => {
    removeStreamingTemps();
    for (const s of signals) process.off(s, interrupted);
    // Ends as the signal would have ended it without this handler.
    process.kill(process.pid, signal);
  };
  for (const s of signals) process.on(s, interrupted);
  try {
    await writeStreamAtomic(output, body);
  } finally {
    for (const s of signals) process.off(s, interrupted);
  }
}
