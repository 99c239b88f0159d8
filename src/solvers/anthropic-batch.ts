import * as z from "zod";
import type { BatchClient, BatchLine, BatchLook, BatchResult } from "../core/batch.js";
import { batchRequest, jsonLines, jsonOf, type BatchEndpoint } from "./batch-http.js";
import { redactUrl } from "./retrying-post.js";
import { SolverError } from "./solver-error.js";

const BATCHES = "/v1/messages/batches";

const countsSchema = z
  .object({
    processing: z.number(),
    succeeded: z.number(),
    errored: z.number(),
    canceled: z.number(),
    expired: z.number(),
  })
  .loose();

const batchSchema = z
  .object({
    id: z.string(),
    processing_status: z.string(),
    request_counts: countsSchema,
    created_at: z.string().optional(),
    results_url: z.string().nullish(),
  })
  .loose();

const listSchema = z
  .object({
    data: z.array(batchSchema),
    has_more: z.boolean().optional(),
    last_id: z.string().nullish(),
  })
  .loose();

const lineSchema = z
  .object({
    custom_id: z.string(),
    result: z
      .object({
        type: z.string(),
        message: z.unknown().optional(),
        error: z.unknown().optional(),
      })
      .loose(),
  })
  .loose();

function parse<T>(schema: z.ZodType<T>, text: string, what: string): T {
  const parsed = schema.safeParse(jsonOf(text, what));
  if (!parsed.success) throw new SolverError("provider", `${what}: unexpected answer`);
  return parsed.data;
}

/**
 * Anthropic's Message Batches: the requests in one POST, each `custom_id` the nonce and its
 * index (a batch carries no metadata), looked at until `ended`, its results read from
 * `results_url`. An orphaned batch (created, its id lost to a kill) is found by its custom ids,
 * which Anthropic shows only in the results: one still running is `"pending"` until it ends.
 *
 * @example const id = await anthropicBatchClient(endpoint, group).create(nonce, lines, "24h");
 */
export function anthropicBatchClient(endpoint: BatchEndpoint, group: string): BatchClient {
  const get = async (id: string) =>
    parse(batchSchema, await batchRequest(endpoint, "GET", `${BATCHES}/${id}`), `batch ${id}`);
  const results = async (batchId: string): Promise<Map<string, BatchResult>> => {
    const batch = await get(batchId);
    const url = batch.results_url ?? `${BATCHES}/${batchId}/results`;
    // results_url is absolute at Anthropic; a relative one is under the base URL.
    const text = await batchRequest(endpoint, "GET", url);
    const out = new Map<string, BatchResult>();
    for (const raw of jsonLines(text, `the results of batch ${batchId}`)) {
      const line = lineSchema.safeParse(raw);
      if (line.success) out.set(line.data.custom_id, resultOf(line.data.result, endpoint));
    }
    return out;
  };
  return {
    provider: "anthropic",
    endpoint: redactUrl(endpoint.baseURL),
    group,
    async create(nonce: string, lines: readonly BatchLine[]): Promise<string> {
      const body = JSON.stringify({
        requests: lines.map((l) => ({ custom_id: l.customId, params: l.body })),
      });
      return parse(
        batchSchema,
        await batchRequest(endpoint, "POST", BATCHES, body),
        "a batch's creation",
      ).id;
    },
    async find(nonce: string, since: string): Promise<string | "pending" | undefined> {
      const floor = Date.parse(since) - 60_000;
      let after: string | undefined;
      let pending = false;
      for (;;) {
        const query = `${BATCHES}?limit=100${after === undefined ? "" : `&after_id=${after}`}`;
        const page = parse(
          listSchema,
          await batchRequest(endpoint, "GET", query),
          "the batch list",
        );
        for (const batch of page.data) {
          if (Date.parse(batch.created_at ?? "") < floor) return pending ? "pending" : undefined;
          if (batch.processing_status !== "ended") {
            pending = true;
            continue;
          }
          const got = await results(batch.id);
          if ([...got.keys()].some((id) => id.startsWith(`${nonce}-`))) return batch.id;
        }
        if (!page.has_more || !page.last_id) return pending ? "pending" : undefined;
        after = page.last_id;
      }
    },
    async look(batchId: string): Promise<BatchLook> {
      const batch = await get(batchId);
      const c = batch.request_counts;
      const total = c.processing + c.succeeded + c.errored + c.canceled + c.expired;
      const done = total - c.processing;
      return batch.processing_status === "ended"
        ? { status: "ended", total, done }
        : { status: "running", total, done };
    },
    results,
    async cancel(batchId: string): Promise<void> {
      await batchRequest(endpoint, "POST", `${BATCHES}/${batchId}/cancel`, "{}");
    },
  };
}

function resultOf(
  result: z.infer<typeof lineSchema>["result"],
  endpoint: BatchEndpoint,
): BatchResult {
  switch (result.type) {
    case "succeeded":
      return { kind: "succeeded", body: JSON.stringify(result.message ?? null) };
    case "expired":
      return { kind: "expired" };
    case "canceled":
      return { kind: "cancelled" };
    default: {
      const says = endpoint.errorDetail(JSON.stringify(result.error ?? null));
      return {
        kind: "errored",
        message: `failed inside the batch${says === "" ? "" : `: ${says}`}`,
      };
    }
  }
}
