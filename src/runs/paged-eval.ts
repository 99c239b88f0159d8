import type { EngineEval, PagedSamples } from "../core/eval.js";
import { isStetError, StetError } from "../core/errors.js";

/**
 * A paged eval (`EngineEval.pages`) with its samples loaded whole (`PagedSamples.whole`, as a
 * dataset that is not paged loads), for what plans against them: a seed, reuse, a distributed
 * run's workers.
 */
export async function wholeEval(ev: EngineEval): Promise<EngineEval> {
  const { pages, ...rest } = ev;
  return pages ? { ...rest, samples: await pages.whole() } : ev;
}

/** E_DUPLICATE_ID naming the rows of a paged dataset where `id` is at `first` and `second`. */
async function duplicateRows(pages: PagedSamples, id: string, first: number, second: number) {
  const rows = [await pages.whereOf(first), await pages.whereOf(second)];
  return new StetError("E_DUPLICATE_ID", `duplicate sample id "${id}": ${rows[0]} and ${rows[1]}`, {
    details: { id, rows },
  });
}

/** The store's refusal of a repeated id in a paged snapshot, reworded with the dataset's rows. */
export async function withDuplicateRows(error: unknown, pages: PagedSamples | undefined) {
  if (!pages || !isStetError(error, "E_DUPLICATE_ID")) return error;
  const { id, positions } = (error.details ?? {}) as { id?: string; positions?: number[] };
  if (id === undefined || positions?.length !== 2) return error;
  return duplicateRows(pages, id, positions[0]!, positions[1]!);
}
