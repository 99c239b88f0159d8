import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { SKIP_SANDBOX } from "./helpers/sandbox.js";
import { tempDir } from "./helpers/temp-store.js";

const REPO = fileURLToPath(new URL("..", import.meta.url));
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: ({ key }) =>
      key.includes("France") ? "Paris" : key.includes("17 + 25") ? "42" : "no idea",
  });
});
afterAll(() => mock.close());

describe("the bundled examples", () => {
  it("runs the README's main command: the arithmetic eval, no key, no network", async () => {
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    expect(readme).toContain("npm ci && npx stet run examples/arithmetic/eval.ts ");
    const tmp = tempDir();
    try {
      const result = await runCli(
        ["run", "examples/arithmetic/eval.ts", "--store", `${tmp.dir}/stet.db`],
        { cwd: REPO },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^run r_\w+ · arithmetic · 30 keys/);
      // calc.mjs ignores operator precedence: some answers are wrong, none error.
      expect(result.stdout).toMatch(/30 total · 30 scored · 0 errored/);
      const mean = Number(result.stdout.match(/exact\s+([\d.]+)/)![1]);
      expect(mean).toBeGreaterThan(0.3);
      expect(mean).toBeLessThan(1);
    } finally {
      tmp.cleanup();
    }
  });

  it("runs the chat example against an OpenAI-compatible endpoint from OPENAI_BASE_URL", async () => {
    const tmp = tempDir();
    try {
      const result = await runCli(
        ["run", "examples/chat/eval.ts", "--store", `${tmp.dir}/stet.db`, "--model", "local-model"],
        {
          cwd: REPO,
          env: { OPENAI_BASE_URL: mock.url, OPENAI_API_KEY: "sk-example" },
        },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/includes\s+0\.4000/);
      expect(mock.requests.every((r) => r.body.model === "local-model")).toBe(true);
    } finally {
      tmp.cleanup();
    }
  });

  it("runs the agent example: two model calls per sample through ctx.chat, both paid for", async () => {
    const tmp = tempDir();
    mock.reset();
    try {
      const store = `${tmp.dir}/stet.db`;
      const env = { OPENAI_BASE_URL: mock.url, OPENAI_API_KEY: "sk-example" };
      const result = await runCli(["run", "examples/agent/eval.ts", "--store", store], {
        cwd: REPO,
        env,
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/includes\s+0\.4000/);
      expect(mock.requests).toHaveLength(10);
      const runId = result.stdout.match(/^run (r_\w+)/)![1]!;
      const exported = await runCli(["export", runId, "--store", store], { cwd: REPO });
      const rows = exported.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { usage: { inputTokens: number; outputTokens: number } });
      // The mock charges 10 prompt and 5 completion tokens a call: two calls per sample.
      expect(rows.map((r) => r.usage)).toEqual(
        Array(5).fill(expect.objectContaining({ inputTokens: 20, outputTokens: 10 })),
      );
    } finally {
      tmp.cleanup();
    }
  });
  it.skipIf(SKIP_SANDBOX)(
    "runs the HumanEval example: canonical solutions pass in the sandbox",
    { timeout: 60_000 },
    async () => {
      const tmp = tempDir();
      try {
        const result = await runCli(
          ["run", "examples/humaneval/eval.ts", "--store", `${tmp.dir}/stet.db`, "--limit", "20"],
          { cwd: REPO },
        );
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toMatch(/20 total · 20 scored · 0 errored/);
        expect(result.stdout).toMatch(/code\s+1\.0000/);
      } finally {
        tmp.cleanup();
      }
    },
  );
});
