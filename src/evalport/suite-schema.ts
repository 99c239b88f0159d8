import * as z from "zod";
import { jsonSchema } from "../core/json.js";

/**
 * Typed views of the parts of an EvalPort suite that stet executes. The spec's JSON Schemas
 * (validateFile) judge a suite first; these zod schemas only give the validated JSON a type,
 * so they are loose: fields stet does not use pass through.
 */

const jsonObject = z.record(z.string(), jsonSchema);

export const providerSchema = z
  .object({
    model: z.string().optional(),
    api_base: z.string().optional(),
    api_key_env: z.string().optional(),
    temperature: z.number().optional(),
    max_tokens: z.number().int().optional(),
    extra: jsonObject.optional(),
  })
  .loose();

export const graderSchema = z
  .object({
    id: z.string().min(1),
    type: z.string().min(1),
    params: jsonObject.optional(),
    weight: z.number().optional(),
    description: z.string().optional(),
  })
  .loose();

export const testCaseSchema = z
  .object({
    id: z.string().min(1),
    input: z.union([z.string(), z.array(z.string())]),
    expected_output: z.string().optional(),
    graders: z.array(z.union([z.string(), graderSchema])).optional(),
    metadata: jsonObject.optional(),
    provider: providerSchema.optional(),
    params: jsonObject.optional(),
    timeout_ms: z.number().int().optional(),
  })
  .loose();

export const suiteSchema = z
  .object({
    version: z.string(),
    id: z.string().min(1),
    name: z.string().optional(),
    graders: z.array(graderSchema).optional(),
    test_cases: z.array(z.unknown()).optional(),
    test_cases_file: z.string().optional(),
    config: z
      .object({
        provider: providerSchema.optional(),
        defaults: z.object({ timeout_ms: z.number().int().optional() }).loose().optional(),
        parallel: z.number().int().optional(),
        retry: z
          .object({ max_attempts: z.number().int().optional(), backoff_ms: z.number().optional() })
          .loose()
          .optional(),
      })
      .loose()
      .optional(),
    metadata: jsonObject.optional(),
  })
  .loose();

export type SuiteProvider = z.infer<typeof providerSchema>;
export type SuiteGrader = z.infer<typeof graderSchema>;
export type SuiteTestCase = z.infer<typeof testCaseSchema>;
export type Suite = z.infer<typeof suiteSchema>;
