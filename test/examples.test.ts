import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
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
});
