import type { Json } from "../core/json.js";
import type { Sample } from "../core/types.js";

/** A dataset row as read from a file or given inline. */
export type DatasetRow = Record<string, Json>;

/** A row after the optional mapper: `id` is derived from the content when absent. */
export type SampleInput = Omit<Sample, "id"> & { id?: string | number };

export type DatasetSource<Row = DatasetRow> =
  string | readonly Row[] | Iterable<Row> | AsyncIterable<Row>;
