import { hash } from "node:crypto";
import * as z from "zod";
import { StetError, thrownMessage } from "../core/errors.js";
import {
  contentIdFromFingerprint,
  fingerprintSample,
  type Sha256Hex,
} from "../core/fingerprint.js";
import type { Sample, SampleRecord } from "../core/types.js";
import { isJson } from "../core/json.js";
import { jsonObjectSchema, jsonValueSchema } from "./json-value-schema.js";

const sampleInputSchema = z.strictObject({
  id: z.union([z.string().min(1), z.number().finite()]).optional(),
  input: jsonValueSchema,
  target: jsonValueSchema.optional(),
  metadata: jsonObjectSchema.optional(),
});

const METADATA_PREFIX = "metadata.";

/**
 * node:crypto's digest equals core's portable one, and halves the time to load 100,000 rows; its
 * one-shot `hash` takes a third of the time of a `Hash` object per sample (1.0 against 2.9 s
 * for a million).
 */
const nodeSha256Hex: Sha256Hex = (text) => hash("sha256", text, "hex");

/**
 * Validates one `{ id?, input, target?, metadata? }` value and gives it its id (the given one
 * as a string, else one derived from the content) and fingerprint. An unmapped row's
 * `metadata.<key>` columns are gathered into `metadata` (so a CSV can carry metadata).
 *
 * @example toSampleRecord({ input: "2+2", target: "4" }, "qa.jsonl:1", { mapped: false })
 */
export function toSampleRecord(
  value: unknown,
  where: string,
  options: { mapped: boolean },
): SampleRecord {
  let fields: SampleFields | undefined;
  let result: ReturnType<typeof sampleInputSchema.safeParse> | undefined;
  try {
    const row = options.mapped ? value : gatherMetadata(value);
    fields = plainSampleFields(row);
    if (fields === undefined) result = sampleInputSchema.safeParse(row);
  } catch (cause) {
    // A getter or proxy of an inline row threw while it was read.
    throw new StetError("E_DATASET", `${where}: reading the row threw: ${thrownMessage(cause)}`, {
      cause,
    });
  }
  if (result && !result.success) {
    throw new StetError("E_DATASET", `${where}: ${describeIssues(result.error, options.mapped)}`, {
      details: { where, issues: result.error.issues },
    });
  }
  const { id, input, target, metadata } = fields ?? result!.data!;
  const sample = newSample(input, target, metadata);
  const fingerprint = fingerprintSample(sample, nodeSha256Hex);
  sample.id = id === undefined ? contentIdFromFingerprint(fingerprint) : String(id);
  return { sample, fingerprint };
}

/** A sample's fields as given, before its id is made a string (or derived). */
interface SampleFields {
  id?: string | number | undefined;
  input: Sample["input"];
  target?: Sample["target"] | undefined;
  metadata?: Sample["metadata"] | undefined;
}

const SAMPLE_FIELDS = new Set(["id", "input", "target", "metadata"]);

/**
 * The fields of a row that `sampleInputSchema` certainly accepts as they are, checked without
 * zod (several times faster, and no copy of the row): a plain object with no other field, an id
 * that is a non-empty string or a finite number, JSON values (`isJson`, the schema's own walk),
 * metadata a plain object. Undefined otherwise: zod then checks the row and words the problem,
 * so a row this refuses is judged exactly as before.
 */
function plainSampleFields(row: unknown): SampleFields | undefined {
  if (!isRecord(row) || !isPlainPrototype(row)) return undefined;
  for (const key in row) if (!SAMPLE_FIELDS.has(key)) return undefined;
  const { id, input, target, metadata } = row;
  const idOk =
    id === undefined ||
    (typeof id === "string" && id.length > 0) ||
    (typeof id === "number" && Number.isFinite(id));
  if (!idOk || !isJson(input)) return undefined;
  if (target !== undefined && !isJson(target)) return undefined;
  if (metadata !== undefined && !(isRecord(metadata) && isPlainPrototype(metadata))) {
    return undefined;
  }
  if (metadata !== undefined && !isJson(metadata)) return undefined;
  return { id, input, target, metadata: metadata as Sample["metadata"] };
}

function isPlainPrototype(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A sample with every field it has in one literal (its id set after): V8 keeps a literal's fields
 * in the object, where a field added later goes to a second allocation, ~32 bytes more a sample
 * of a loaded dataset. The fields keep their order (id, input, target, metadata).
 */
function newSample(
  input: Sample["input"],
  target: Sample["target"],
  metadata: Sample["metadata"],
): Sample {
  if (target === undefined) {
    return metadata === undefined ? { id: "", input } : { id: "", input, metadata };
  }
  return metadata === undefined ? { id: "", input, target } : { id: "", input, target, metadata };
}

function gatherMetadata(value: unknown): unknown {
  if (!isRecord(value) || !hasDottedKey(value)) return value;
  const metadata = value.metadata ?? {};
  if (!isRecord(metadata)) return value;
  const gathered: Record<string, unknown> = { ...metadata };
  const row: Record<string, unknown> = { metadata: gathered };
  for (const key in value) {
    if (key.startsWith(METADATA_PREFIX)) gathered[key.slice(METADATA_PREFIX.length)] = value[key];
    else if (key !== "metadata") row[key] = value[key];
  }
  return row;
}

function hasDottedKey(value: Record<string, unknown>): boolean {
  for (const key in value) if (key.startsWith(METADATA_PREFIX)) return true;
  return false;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function describeIssues(error: z.ZodError, mapped: boolean): string {
  return error.issues
    .map((issue) => {
      if (issue.code === "unrecognized_keys") {
        const fix = mapped
          ? "a sample has only id, input, target and metadata"
          : "map other columns with `sample(row)` or prefix them with `metadata.`";
        return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")} (${fix})`;
      }
      return `${issue.path.length > 0 ? issue.path.join(".") : "sample"}: ${issue.message}`;
    })
    .join("; ");
}
