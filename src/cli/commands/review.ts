import { readFile } from "node:fs/promises";
import { parse } from "csv-parse/sync";
import { stringify } from "csv-stringify/sync";
import { StetError } from "../../core/errors.js";
import { reviewInputSchema, type ReviewInput } from "../../core/review-input.js";
import { writeFileAtomic } from "../../durable/write-file-atomic.js";
import { listReviews } from "../../runs/list-reviews.js";
import { recordReviews } from "../../runs/record-reviews.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { prepareOutputFile } from "../output-file.js";

/** The columns `--export` writes, in order; `--import` reads the same (see docs/review.md). */
export const REVIEW_CSV_COLUMNS = [
  "sample_id",
  "epoch",
  "attempt",
  "scorer",
  "reviewer",
  "verdict",
  "value",
  "note",
  "created_at",
  "current",
] as const;

/** Columns `--import` ignores: what the store sets itself. */
const SET_BY_STORE = new Set(["created_at", "current"]);

export interface ReviewFlags {
  store?: string;
  import?: string;
  export?: string | boolean;
  reviewer?: string;
  json?: boolean;
}

/**
 * `stet review <run-id> --import reviews.csv` stores the file's reviews (all or none, each of its
 * key's current attempt; `--reviewer`, else `STET_REVIEWER`, for rows naming none);
 * `--export [file]` writes every review of the run as CSV (stdout without a file), history
 * included. Returns the exit code.
 *
 * @example process.exitCode = await reviewCommand("r_abc", { import: "reviews.csv", reviewer: "ada" });
 */
export async function reviewCommand(runId: string, flags: ReviewFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  if ((flags.import === undefined) === (flags.export === undefined))
    throw new StetError(
      "E_USAGE",
      "stet review needs exactly one of --import <file> and --export [file]",
    );
  const reviewer = flags.reviewer ?? (process.env.STET_REVIEWER || undefined);
  const inputs = flags.import === undefined ? [] : await readReviewsCsv(flags.import);
  const output =
    typeof flags.export === "string" && flags.export !== "-" ? flags.export : undefined;
  if (output) await prepareOutputFile(output, "--export");
  const store = await openStore(flags.store, { create: false });
  try {
    if (flags.import !== undefined) {
      const stored = await recordReviews({
        store,
        runId,
        reviews: inputs.map((r) => r.review),
        ...(reviewer ? { reviewer } : {}),
        where: (i) => inputs[i]!.where,
      });
      if (flags.json) io.stdout.write(`${JSON.stringify({ runId, stored: stored.length })}\n`);
      else io.say(`stored ${stored.length} review(s) of run ${runId} from ${flags.import}`);
      return 0;
    }
    const reviews = await listReviews(store, runId);
    const text = stringify(
      reviews.map((r) => [
        r.sampleId,
        r.epoch,
        r.attempt,
        r.scorer,
        r.reviewer,
        r.value === 1 ? "pass" : r.value === 0 ? "fail" : "",
        r.value,
        r.note ?? "",
        r.createdAt,
        r.current ? "true" : "false",
      ]),
      { header: true, columns: [...REVIEW_CSV_COLUMNS] },
    );
    if (output) {
      await writeFileAtomic(output, text);
      io.say(`wrote ${reviews.length} review(s) of run ${runId} to ${output}`);
    } else io.stdout.write(text);
    return 0;
  } finally {
    await store.close();
  }
}

/** The file's rows as review inputs, each with the line it starts on; a bad row is refused by line. */
async function readReviewsCsv(file: string): Promise<{ review: ReviewInput; where: string }[]> {
  const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new StetError(
      "E_USAGE",
      `--import ${file}: cannot be read (${error.code ?? error.message})`,
    );
  });
  let rows: { record: Record<string, string>; info: { lines: number } }[];
  try {
    rows = parse(text, { columns: true, bom: true, skip_empty_lines: true, info: true });
  } catch (error) {
    throw new StetError("E_INVALID_INPUT", `${file}: invalid CSV: ${(error as Error).message}`);
  }
  return rows.map(({ record, info }) => {
    const where = `${file}:${info.lines}`;
    const unknown = Object.keys(record).filter(
      (c) => !(REVIEW_CSV_COLUMNS as readonly string[]).includes(c),
    );
    if (unknown.length > 0)
      throw new StetError(
        "E_INVALID_INPUT",
        `${where}: unknown column ${unknown.map((c) => `"${c}"`).join(", ")} (expected ${REVIEW_CSV_COLUMNS.join(", ")})`,
      );
    const candidate: Record<string, unknown> = {};
    for (const [column, value] of Object.entries(record)) {
      if (value === "" || SET_BY_STORE.has(column)) continue;
      const key = column.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
      candidate[key] = ["epoch", "attempt", "value"].includes(column) ? Number(value) : value;
    }
    // An export read back: its verdict column repeats the value; the value is what counts.
    if (candidate.value !== undefined && candidate.verdict !== undefined) delete candidate.verdict;
    const parsed = reviewInputSchema.safeParse(candidate);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join(".") ?? "";
      throw new StetError(
        "E_INVALID_INPUT",
        `${where}: ${field ? `${field}: ` : ""}${issue?.message ?? "invalid"}`,
      );
    }
    return { review: parsed.data, where };
  });
}
