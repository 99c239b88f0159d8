import { createHash } from "node:crypto";
import { openDatasetFile } from "../dataset/dataset-file.js";
import { resolve } from "node:path";
import type { Eval } from "./types.js";

/**
 * What a stamp is computed under: bump it whenever reading a dataset file (the readers, the
 * sample records they build, their fingerprints) changes, so that no stamp recorded before
 * vouches for a snapshot the new code would read differently.
 */
export const DATASET_STAMP_FORMAT = 1;

const CHUNK = 1 << 20;

/**
 * The stamp of an eval's dataset: the sha256 of the file's bytes under `DATASET_STAMP_FORMAT`.
 * Equal stamps mean the file reads as the same samples with the same fingerprints, so a run
 * whose snapshot was read from a file of this stamp has every sample current without the file
 * being parsed again. None for a dataset that is not a file (in code, generated) or whose rows
 * go through the eval's `sample` mapper (code the stamp cannot see), nor for a file that cannot
 * be read (its load reports why).
 *
 * @example const stamp = await datasetStamp(ev, baseDir); // "1:9f86d0…" or undefined
 */
export async function datasetStamp(
  ev: Pick<Eval, "dataset" | "sample">,
  baseDir: string,
): Promise<string | undefined> {
  if (typeof ev.dataset !== "string" || ev.sample !== undefined) return undefined;
  // Not there, unreadable or not a file: the load says so (openDatasetFile's E_DATASET).
  const handle = await openDatasetFile(resolve(baseDir, ev.dataset)).catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
    return `${DATASET_STAMP_FORMAT}:${hash.digest("hex")}`;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}
