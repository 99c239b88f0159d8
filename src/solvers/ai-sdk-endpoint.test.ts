import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { describe, expect, it } from "vitest";
import { languageModelEndpoint } from "./ai-sdk-endpoint.js";

describe("an AI SDK model's endpoint for the rate limits", () => {
  it("reads the provider package's base URL and credential; another key is another credential", async () => {
    const model = (apiKey: string) =>
      createOpenAI({ baseURL: "http://u:p@127.0.0.1:9/v1", apiKey }).chat("gpt-test");
    const a = await languageModelEndpoint(model("sk-a"));
    expect(a).toMatchObject({
      provider: "openai",
      model: "gpt-test",
      baseURL: "http://***@127.0.0.1:9/v1",
    });
    expect(a.credential).toContain("sk-a");
    expect((await languageModelEndpoint(model("sk-a"))).credential).toBe(a.credential);
    expect((await languageModelEndpoint(model("sk-b"))).credential).not.toBe(a.credential);
    const claude = createAnthropic({ baseURL: "http://127.0.0.1:9/v1", apiKey: "sk-c" })("c");
    expect(await languageModelEndpoint(claude)).toMatchObject({
      provider: "anthropic",
      model: "c",
      baseURL: "http://127.0.0.1:9/v1",
    });
  });

  it("is the provider and model id alone for a model without a provider config, or without a key", async () => {
    const bare = {
      specificationVersion: "v2" as const,
      provider: "custom.chat",
      modelId: "m",
      doGenerate: () => Promise.resolve({}),
    };
    expect(await languageModelEndpoint(bare)).toEqual({
      provider: "custom",
      model: "m",
      baseURL: "",
    });
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const keyless = createOpenAI({ baseURL: "http://127.0.0.1:9/v1" }).chat("m");
      expect((await languageModelEndpoint(keyless)).credential).toBeUndefined();
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });
});
