import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// A key (and a header value) given to ctx.chat itself, not declared by any solver or scorer nor
// held by a credential-like variable, is redacted like every other secret once the call is made.

const KEY = "sk-test-echo-0123456789";
const HEADER = "hdr-test-echo-9876543210";

/** The forms an echoing server may send a secret back in. */
const forms = (secret: string) => [
  secret,
  Buffer.from(secret).toString("base64"),
  encodeURIComponent(secret),
];

function expectClean(where: string, bytes: string | Buffer): void {
  const haystack = typeof bytes === "string" ? bytes : bytes.toString("latin1");
  for (const secret of [KEY, HEADER]) {
    for (const form of forms(secret)) {
      if (haystack.includes(form)) throw new Error(`${where} holds ${secret} (as ${form})`);
    }
  }
}

/**
 * An agent of two journaled ctx.chat calls with its own key and header; sample "b" fails quoting
 * the reply. The scorer asks the endpoint too, with the same key, and quotes its reply.
 */
const EVAL = `import { defineEval } from "stet";
const ask = (ctx, content) =>
  ctx.chat({
    model: "gpt-test",
    baseURL: process.env.MOCK_URL,
    apiKey: "${KEY}",
    headers: { "X-Api-Key": "${HEADER}" },
    maxRetries: 0,
    messages: [{ role: "user", content }],
  });
export default defineEval({
  name: "chat-key",
  dataset: [
    { id: "a", input: "a", target: "a" },
    { id: "b", input: "b", target: "b" },
  ],
  solver: async (sample, ctx) => {
    const first = await ask(ctx, sample.input + " first");
    const second = await ask(ctx, sample.input + " second");
    if (sample.id === "b") throw new Error("gave up after: " + second.content);
    return { output: second.content, transcript: [first.content, second.content] };
  },
  scorers: [
    {
      name: "judge",
      score: async ({ output, ctx }) => {
        const reply = await ask(ctx, "judge " + String(output).length);
        return { value: 1, explanation: reply.content, metadata: { said: reply.content } };
      },
    },
  ],
});
`;

const { project } = perTest();
const mocks: MockOpenAI[] = [];
afterEach(async () => {
  while (mocks.length) await mocks.pop()!.close();
});

/** An OpenAI chat-completions server that quotes the request's credentials in its reply. */
async function echoingEndpoint(): Promise<MockOpenAI> {
  const mock = await startMockOpenAI({
    reply: ({ key, headers }) =>
      `${key}: you sent ${String(headers.authorization)} and x-api-key ` +
      `${String(headers["x-api-key"])} (base64 ${Buffer.from(KEY).toString("base64")})`,
  });
  mocks.push(mock);
  return mock;
}

interface ExportedLine {
  sampleId: string;
  status: string;
  output: unknown;
  error?: { message: string } | null;
  redacted?: string[];
  journal?: { kind: string; redacted?: string[] }[];
}

const NAMED = ["ctx.chat apiKey", "ctx.chat header x-api-key"];

describe("a key passed to ctx.chat", () => {
  it("reaches neither the SQLite file and its WAL nor the export, and the attempt names it", async () => {
    const mock = await echoingEndpoint();
    const dir = project({ "eval.mjs": EVAL }).dir;
    const store = join(dir, "store", "stet.db");
    // No variable holds the key: only the call itself can make it known.
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "" };
    const run = await runCli(["run", "eval.mjs", "--store", store, "--json"], { cwd: dir, env });
    expect(run.code, run.stderr).toBe(3); // "b" is an error attempt
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
    // The endpoint was sent the key and the header, and echoed them (5 calls: 2 + 2 + a judge).
    expect(mock.requests).toHaveLength(5);
    expect(mock.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(mock.requests[0]?.headers["x-api-key"]).toBe(HEADER);

    const exported = await runCli(["export", runId, "--format", "jsonl", "--store", store], {
      cwd: dir,
      env,
    });
    expect(exported.code, exported.stderr).toBe(0);
    const lines = exported.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ExportedLine);
    const a = lines.find((l) => l.sampleId === "a")!;
    const b = lines.find((l) => l.sampleId === "b")!;
    // Redacted, not dropped: the echo is there without the secrets.
    expect(a.output).toContain("you sent Bearer [redacted] and x-api-key [redacted]");
    expect(a.redacted).toEqual(NAMED);
    expect(b.status).toBe("error");
    expect(b.error?.message).toContain("gave up after: b second: you sent Bearer [redacted]");
    expect(b.redacted).toEqual(NAMED);
    // Both chat steps of each sample were journaled, the key taken out of each entry.
    const chats = lines.flatMap((l) => (l.journal ?? []).filter((s) => s.kind === "chat"));
    expect(chats.length).toBeGreaterThanOrEqual(4);
    for (const step of chats) expect(step.redacted).toEqual(NAMED);

    expectClean("stdout of run", run.stdout + run.stderr);
    expectClean("jsonl export", exported.stdout + exported.stderr);
    const files = readdirSync(dirname(store));
    expect(files).toContain("stet.db");
    for (const file of files) expectClean(file, readFileSync(join(dirname(store), file)));
  });
});
