/**
 * The mock OpenAI server as a standalone process, for tests that need it outside the test
 * process. Prints one JSON line `{"url":"http://127.0.0.1:PORT/v1","port":PORT}` on stdout once
 * listening; counts per sample are at GET /__counts (and in --counts-file when given).
 *
 *   node --import tsx test/helpers/mock-openai-server.ts [--port 0] [--latency-ms 0]
 *     [--counts-file counts.json] [--sequence '[{"status":500}]'] [--replies replies.json]
 *     [--usage '{"prompt_tokens":10,"completion_tokens":5}']
 *
 * --replies maps a user message to its reply (a JSON file or inline JSON); others are echoed.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startMockOpenAI } from "./mock-openai.js";
import type { MockAction, MockUsage } from "./mock-openai.js";

const { values } = parseArgs({
  options: {
    host: { type: "string" },
    port: { type: "string" },
    "latency-ms": { type: "string" },
    "counts-file": { type: "string" },
    sequence: { type: "string" },
    replies: { type: "string" },
    usage: { type: "string" },
  },
});

const jsonArg = <T>(value: string | undefined): T | undefined => {
  if (value === undefined) return undefined;
  return JSON.parse(
    value.trimStart().startsWith("{") || value.trimStart().startsWith("[")
      ? value
      : readFileSync(value, "utf8"),
  ) as T;
};

const replies = jsonArg<Record<string, string>>(values.replies) ?? {};
const mock = await startMockOpenAI({
  ...(values.host === undefined ? {} : { host: values.host }),
  port: Number(values.port ?? 0),
  latencyMs: Number(values["latency-ms"] ?? 0),
  ...(values["counts-file"] === undefined ? {} : { countsFile: values["counts-file"] }),
  ...(values.sequence === undefined ? {} : { sequence: jsonArg<MockAction[]>(values.sequence) }),
  ...(values.usage === undefined ? {} : { usage: jsonArg<MockUsage>(values.usage) }),
  reply: ({ key }) => replies[key] ?? key,
});

process.stdout.write(`${JSON.stringify({ url: mock.url, port: mock.port })}\n`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void mock.close().then(() => process.exit(0));
  });
}
