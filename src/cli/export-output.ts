import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { syncDirectory } from "../durable/write-file-atomic.js";
import { prepareOutputFile } from "./output-file.js";

/** Writes a piece of the output, waiting while the destination is full. */
export type Write = (text: string) => Promise<void>;

/**
 * Runs `body` with a writer to stdout, or to `output` (`-o`): a temporary file beside it, synced
 * and renamed over it only once `body` finished, so a failure or a kill leaves the old file (or
 * none) and never a part of the export. Each write waits for the destination to drain, so memory
 * holds one piece at a time however long the export.
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
  const temp = `${output}.${process.pid}.tmp`;
  const out = createWriteStream(temp);
  try {
    await body(async (text) => {
      if (!out.write(text)) await once(out, "drain");
    });
    out.end();
    await once(out, "finish");
    await fsyncFile(temp);
    await rename(temp, output);
    syncDirectory(dirname(output));
  } finally {
    out.destroy();
    await rm(temp, { force: true });
  }
}

async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
