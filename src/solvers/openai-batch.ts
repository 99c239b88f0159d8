import * as z from "zod";
import type { BatchClient, BatchLine, BatchLook, BatchResult } from "../core/batch.js";
import { batchRequest, jsonLines, jsonOf, type BatchEndpoint } from "./batch-http.js";
import { redactUrl } from "./retrying-post.js";
import { SolverError } from "./solver-error.js";

/** The metadata key of the nonce stet records before it creates a batch. */
export const NONCE_KEY = "stet_nonce";
const CHAT_PATH = "/v1/chat/completions";

const batchSchema = z
  .object({
    id: z.string(),
    status: z.string(),
    created_at: z.number().optional(),
    output_file_id: z.string().nullish(),
    error_file_id: z.string().nullish(),
    request_counts: z
      .object({ total: z.number(), completed: z.number(), failed: z.number() })
      .loose()
      .nullish(),
    errors: z
      .object({ data: z.array(z.object({ message: z.string().optional() }).loose()).nullish() })
      .loose()
      .nullish(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
  })
  .loose();

const listSchema = z
  .object({ data: z.array(batchSchema), has_more: z.boolean().optional() })
  .loose();

const lineSchema = z
  .object({
    custom_id: z.string(),
    response: z.object({ status_code: z.number(), body: z.unknown() }).loose().nullish(),
    error: z
      .object({ code: z.string().nullish(), message: z.string().nullish() })
      .loose()
      .nullish(),
  })
  .loose();

function parse<T>(schema: z.ZodType<T>, text: string, what: string): T {
  const parsed = schema.safeParse(jsonOf(text, what));
  if (!parsed.success) throw new SolverError("provider", `${what}: unexpected answer`);
  return parsed.data;
}

/**
 * OpenAI's Batch API (also served by other OpenAI-compatible hosts): the requests as a JSONL file
 * uploaded with purpose `batch`, a batch of `/v1/chat/completions` over it with the nonce in its
 * `metadata`, looked at until it ends, its output and error files downloaded.
 *
 * @example const client = openaiBatchClient(endpoint); const id = await client.create(nonce, lines, "24h");
 */
export function openaiBatchClient(endpoint: BatchEndpoint, group: string): BatchClient {
  const get = async (id: string) =>
    parse(batchSchema, await batchRequest(endpoint, "GET", `/batches/${id}`), `batch ${id}`);
  return {
    provider: "openai",
    endpoint: redactUrl(endpoint.baseURL),
    group,
    async create(nonce: string, lines: readonly BatchLine[], window: string): Promise<string> {
      const jsonl = lines
        .map((l) =>
          JSON.stringify({ custom_id: l.customId, method: "POST", url: CHAT_PATH, body: l.body }),
        )
        .join("\n");
      const form = new FormData();
      form.append("purpose", "batch");
      form.append(
        "file",
        new Blob([`${jsonl}\n`], { type: "application/jsonl" }),
        `${nonce}.jsonl`,
      );
      const file = parse(
        z.object({ id: z.string() }).loose(),
        await batchRequest(endpoint, "POST", "/files", form),
        "the batch's file upload",
      );
      const body = JSON.stringify({
        input_file_id: file.id,
        endpoint: CHAT_PATH,
        completion_window: window,
        metadata: { [NONCE_KEY]: nonce },
      });
      return parse(
        batchSchema,
        await batchRequest(endpoint, "POST", "/batches", body),
        "a batch's creation",
      ).id;
    },
    async find(nonce: string, since: string): Promise<string | undefined> {
      // Newest first: stop at batches made well before the submission was recorded.
      const floor = Date.parse(since) / 1000 - 3_600;
      let after: string | undefined;
      for (;;) {
        const query = `/batches?limit=100${after === undefined ? "" : `&after=${after}`}`;
        const page = parse(
          listSchema,
          await batchRequest(endpoint, "GET", query),
          "the batch list",
        );
        const match = page.data.find((b) => b.metadata?.[NONCE_KEY] === nonce);
        if (match) return match.id;
        const last = page.data.at(-1);
        if (!page.has_more || !last || (last.created_at ?? Infinity) < floor) return undefined;
        after = last.id;
      }
    },
    async look(batchId: string): Promise<BatchLook> {
      const batch = await get(batchId);
      const counts = batch.request_counts;
      const total = counts?.total ?? 0;
      const done = (counts?.completed ?? 0) + (counts?.failed ?? 0);
      switch (batch.status) {
        case "completed":
        case "expired":
        case "cancelled":
          return { status: "ended", total, done };
        case "failed": {
          const reason = batch.errors?.data?.map((e) => e.message ?? "").join("; ") || "failed";
          return { status: "failed", reason: `batch ${batchId} failed: ${reason}` };
        }
        default:
          return { status: "running", total, done };
      }
    },
    async results(batchId: string): Promise<Map<string, BatchResult>> {
      const batch = await get(batchId);
      const results = new Map<string, BatchResult>();
      for (const file of [batch.output_file_id, batch.error_file_id]) {
        if (!file) continue;
        const text = await batchRequest(endpoint, "GET", `/files/${file}/content`);
        for (const raw of jsonLines(text, `file ${file}`)) {
          const line = lineSchema.safeParse(raw);
          if (line.success) results.set(line.data.custom_id, resultOf(line.data, endpoint));
        }
      }
      return results;
    },
    async cancel(batchId: string): Promise<void> {
      await batchRequest(endpoint, "POST", `/batches/${batchId}/cancel`, "{}");
    },
  };
}

function resultOf(line: z.infer<typeof lineSchema>, endpoint: BatchEndpoint): BatchResult {
  const { response, error } = line;
  if (response && response.status_code >= 200 && response.status_code < 300) {
    return { kind: "succeeded", body: JSON.stringify(response.body) };
  }
  if (response) {
    const says = endpoint.errorDetail(JSON.stringify(response.body));
    return {
      kind: "errored",
      message: `HTTP ${response.status_code} inside the batch${says === "" ? "" : `: ${says}`}`,
      status: response.status_code,
    };
  }
  if (error?.code === "batch_expired") return { kind: "expired" };
  if (error?.code === "batch_cancelled") return { kind: "cancelled" };
  return {
    kind: "errored",
    message: `failed inside the batch: ${error?.message ?? "no reason given"}`,
  };
}
