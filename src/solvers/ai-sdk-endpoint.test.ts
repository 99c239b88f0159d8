import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { describe, expect, it } from "vitest";
import { languageModelEndpoint } from "./ai-sdk-endpoint.js";
import { anthropic } from "./anthropic-provider.js";
import { headersCredential } from "./headers-credential.js";
import { openai } from "./openai-provider.js";

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
    // Without the package's `/v1`, as stet's own Anthropic provider names the endpoint.
    expect(await languageModelEndpoint(claude)).toMatchObject({
      provider: "anthropic",
      model: "c",
      baseURL: "http://127.0.0.1:9",
      credential: headersCredential({ "x-api-key": "sk-c" }),
    });
  });

  it("names the credential as stet's own providers do: the same key is one budget", async () => {
    const openaiModel = createOpenAI({
      baseURL: "http://127.0.0.1:9/v1",
      apiKey: "sk-a",
      organization: "org-1",
    }).chat("m");
    expect((await languageModelEndpoint(openaiModel)).credential).toBe(
      headersCredential({
        ...openai.headers("sk-a"),
        "OpenAI-Organization": "org-1",
      }),
    );
    const claude = createAnthropic({ baseURL: "http://127.0.0.1:9/v1", apiKey: "sk-c" })("c");
    expect((await languageModelEndpoint(claude)).credential).toBe(
      headersCredential(anthropic.headers("sk-c")),
    );
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
