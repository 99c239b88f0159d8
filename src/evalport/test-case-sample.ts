import * as z from "zod";
import { jsonSchema, type Json } from "../core/json.js";
import type { Sample } from "../core/types.js";
import type { DatasetRow } from "../eval/types.js";
import {
  graderSchema,
  providerSchema,
  type SuiteGrader,
  type SuiteTestCase,
} from "./suite-schema.js";

/**
 * The sample metadata key under which a test case keeps what stet needs to execute and grade
 * it: its grader references (ids or inline graders), RAG context, per-test-case provider and
 * params. Being in the metadata, these are part of the sample's fingerprint, so a test case
 * whose graders or context changed is detected by resume like any changed sample.
 */
export const TEST_CASE_KEY = "evalport.test_case";

const FIELDS = [
  "graders",
  "context",
  "retrieval_context",
  "tools_called",
  "expected_tools",
  "tags",
  "provider",
  "params",
  "timeout_ms",
  "weight",
] as const;

const detailsSchema = z
  .object({
    graders: z.array(z.union([z.string(), graderSchema])).optional(),
    context: z.array(z.string()).optional(),
    retrieval_context: z.array(z.string()).optional(),
    provider: providerSchema.optional(),
    params: z.record(z.string(), jsonSchema).optional(),
    timeout_ms: z.number().int().positive().optional(),
  })
  .loose();

export type TestCaseDetails = z.infer<typeof detailsSchema>;

/**
 * A test case as a stet sample: `id`, `input`, `expected_output` as the target, and the test
 * case's own `metadata` plus its execution details under `TEST_CASE_KEY`.
 *
 * @example testCaseSample({ id: "tc_1", input: "2+2?", expected_output: "4", graders: ["gr_exact"] })
 * // { id: "tc_1", input: "2+2?", target: "4", metadata: { "evalport.test_case": { graders: ["gr_exact"] } } }
 */
export function testCaseSample(tc: SuiteTestCase): DatasetRow {
  const details: Record<string, Json> = {};
  for (const field of FIELDS) {
    const value = (tc as Record<string, unknown>)[field];
    if (value !== undefined) details[field] = value as Json;
  }
  return {
    id: tc.id,
    input: tc.input,
    ...(tc.expected_output === undefined ? {} : { target: tc.expected_output }),
    metadata: { ...tc.metadata, [TEST_CASE_KEY]: details },
  };
}

/**
 * The execution details `testCaseSample` stored in a sample; empty for a sample that did not
 * come from a test case.
 *
 * @example testCaseDetails(sample).graders // ["gr_exact", { id: "inline", type: "contains", ... }]
 */
export function testCaseDetails(sample: Sample): TestCaseDetails {
  const parsed = detailsSchema.safeParse(sample.metadata?.[TEST_CASE_KEY]);
  return parsed.success ? parsed.data : {};
}

/**
 * The grader a test case refers to under the scorer name `name`: its inline grader with that
 * id, else the suite's grader when the test case references it by id (or, when the test case
 * lists no graders, every suite grader). Undefined when the test case does not use it.
 *
 * @example graderFor(sample, "gr_exact", suiteGraders) // { id: "gr_exact", type: "exact_match" }
 */
export function graderFor(
  sample: Sample,
  name: string,
  suiteGraders: ReadonlyMap<string, SuiteGrader>,
): SuiteGrader | undefined {
  const refs = testCaseDetails(sample).graders;
  if (refs === undefined) return suiteGraders.get(name);
  for (const ref of refs) {
    if (typeof ref !== "string" && ref.id === name) return ref;
  }
  return refs.includes(name) ? suiteGraders.get(name) : undefined;
}
