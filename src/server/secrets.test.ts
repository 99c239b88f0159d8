import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SolverFn } from "../core/eval.js";
import { defineEval } from "../eval/define-eval.js";
import type { DatasetRow } from "../eval/types.js";
import { exact } from "../scorers/exact.js";
import { chat } from "../solvers/chat.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";
import { testApp } from "../../test/helpers/server-app.js";
import { collectSse } from "../../test/helpers/sse.js";
import { REDACTED, createRedactor, redactConfig, secretsFromEnv } from "./redact.js";

const SECRET = "sk-test-0123456789abcdefSECRET";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function withEnv(name: string, value: string) {
  const before = process.env[name];
  process.env[name] = value;
  cleanups.push(() => {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  });
}

describe("secrets", () => {
  it("never appear in a response, an event or the store, though the solver used the key", async () => {
    withEnv("OPENAI_API_KEY", SECRET);
    const mock: MockOpenAI = await startMockOpenAI({
      // One sample's provider error quotes the key back, as some providers do.
      respond: ({ key }) =>
        key === "q2"
          ? { status: 401, body: { error: { message: `Incorrect API key provided: ${SECRET}` } } }
          : undefined,
    });
    cleanups.push(() => mock.close());
    const ev = defineEval<DatasetRow>({
      name: "chatty",
      dataset: ["q1", "q2", "q3"].map((id) => ({ id, input: id, target: id })),
      solver: chat({ model: "gpt-test", baseURL: mock.url, maxRetries: 0 }),
      scorers: [exact()],
    });
    const t = testApp([ev], { secrets: secretsFromEnv(process.env) });
    cleanups.push(t.cleanup);

    const streamed = await collectSse(await t.post("/api/runs", { eval: "chatty" }));
    await t.executions.idle();
    const runId = String(streamed[0]?.data.runId);
    expect(mock.requests.map((r) => r.headers.authorization)).toContain(`Bearer ${SECRET}`);

    const texts = [streamed.map((e) => e.raw).join("\n")];
    for (const path of [
      "/api/runs",
      `/api/runs/${runId}`,
      `/api/runs/${runId}/samples`,
      `/api/runs/${runId}/samples/q1`,
      `/api/runs/${runId}/samples/q2`,
      "/api/benchmarks",
      "/api/benchmarks/chatty",
      `/api/runs/${runId}/events`,
    ]) {
      const res = await t.request(path);
      expect(res.status).toBe(200);
      texts.push(await res.text());
    }
    const resumed = await t.post(`/api/runs/${runId}/resume`);
    texts.push(await resumed.text());
    for (const text of texts) expect(text).not.toContain(SECRET);

    const { body } = await t.json(`/api/runs/${runId}`);
    expect(body).toMatchObject({
      config: { solver: { kind: "chat", apiKeyEnv: "OPENAI_API_KEY" } },
    });
    expect(texts.join("\n")).toMatch(/Incorrect API key provided: \*\*\*/);

    for (const file of readdirSync(t.dir).filter((f) => f.startsWith("stet.db"))) {
      expect(readFileSync(join(t.dir, file)).includes(SECRET)).toBe(false);
    }
  });

  it("redacts a credential a custom solver describes, and any known secret in any answer", async () => {
    const solver: SolverFn = () => {
      throw new Error(`upstream refused ${SECRET}`);
    };
    solver.describe = () => ({ kind: "custom", apiKey: SECRET, apiKeyEnv: "MY_KEY" });
    const ev = defineEval<DatasetRow>({
      name: "leaky",
      dataset: [{ id: "a", input: "a" }],
      solver,
      scorers: [exact()],
    });
    const t = testApp([ev], { secrets: [SECRET] });
    cleanups.push(t.cleanup);
    const streamed = await collectSse(await t.post("/api/runs", { eval: "leaky" }));
    const runId = String(streamed[0]?.data.runId);
    const texts = [
      streamed.map((e) => e.raw).join("\n"),
      await (await t.request(`/api/runs/${runId}`)).text(),
      await (await t.request(`/api/runs/${runId}/samples/a`)).text(),
    ];
    for (const text of texts) expect(text).not.toContain(SECRET);
    expect(texts.join()).toContain(REDACTED);
    // The run detail quotes the solver's own message, redacted like everything it sends.
    const { body } = await t.json(`/api/runs/${runId}`);
    expect(body.errors).toEqual([
      {
        type: "solver",
        count: 1,
        examples: [{ sampleId: "a", epoch: 1, message: `upstream refused ${REDACTED}` }],
      },
    ]);
    expect(body.errorsByType).toEqual({ solver: 1 });
    // Nor did the store get it: the recorded configuration is redacted before it is written.
    expect(body).toMatchObject({
      config: { solver: { kind: "custom", apiKey: REDACTED, apiKeyEnv: "MY_KEY" } },
    });
    for (const file of readdirSync(t.dir).filter((f) => f.startsWith("stet.db"))) {
      expect(readFileSync(join(t.dir, file)).includes(SECRET)).toBe(false);
    }
  });
});

describe("redaction helpers", () => {
  it("finds credential-like variables and keeps short or unrelated values", () => {
    expect(
      secretsFromEnv({
        OPENAI_API_KEY: SECRET,
        STET_TOKEN: "tok-12345678",
        HOME: "/root",
        X_KEY: "1",
      }),
    ).toEqual([SECRET, "tok-12345678"]);
  });

  it("replaces secrets at any depth and credential keys in configs", () => {
    const redact = createRedactor([SECRET]);
    expect(redact({ a: [`x ${SECRET} y`], n: 1 })).toEqual({ a: [`x ${REDACTED} y`], n: 1 });
    expect(
      redactConfig({
        solver: {
          apiKey: "k",
          apiKeyEnv: "E",
          headers: ["Authorization"],
          authorization: "Bearer z",
        },
      }),
    ).toEqual({
      solver: {
        apiKey: REDACTED,
        apiKeyEnv: "E",
        headers: ["Authorization"],
        authorization: REDACTED,
      },
    });
  });
});
