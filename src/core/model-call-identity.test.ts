import { describe, expect, it } from "vitest";
import { canonicalJson } from "./json.js";
import { modelCallIdentity, withoutCredentials } from "./model-call-identity.js";

const messages = [{ role: "user", content: "hi" }];

describe("modelCallIdentity", () => {
  it("without a target is the shape journals were always hashed by (fields left out are absent)", () => {
    // The canonical JSON that ctx.chat and solvers.chat hashed before the provider seam:
    // a change here makes every journal of an interrupted run stop replaying.
    expect(canonicalJson(modelCallIdentity({ model: "gpt-4o-mini", messages }))).toBe(
      '{"messages":[{"content":"hi","role":"user"}],"model":"gpt-4o-mini"}',
    );
    expect(
      canonicalJson(
        modelCallIdentity({
          model: null,
          messages,
          system: "Be brief.",
          temperature: 0,
          maxTokens: 5,
          params: { seed: 1 },
        }),
      ),
    ).toBe(
      '{"maxTokens":5,"messages":[{"content":"hi","role":"user"}],"model":null,"params":{"seed":1},"system":"Be brief.","temperature":0}',
    );
  });

  it("with a target adds the provider and the endpoint without credentials, and tools", () => {
    const identity = modelCallIdentity(
      { model: "m", messages, tools: [{ type: "function" }] },
      { provider: "openai", baseURL: "https://user:sk-secret@api.example.com/v1/?key=sk-q#x" },
    );
    expect(identity).toEqual({
      model: "m",
      messages,
      tools: [{ type: "function" }],
      provider: "openai",
      endpoint: "https://api.example.com/v1",
    });
    expect(JSON.stringify(identity)).not.toContain("sk-");
  });

  it("tells endpoints apart", () => {
    const at = (baseURL: string) =>
      canonicalJson(modelCallIdentity({ model: "m", messages }, { provider: "openai", baseURL }));
    expect(at("http://127.0.0.1:8000/v1")).not.toBe(at("http://127.0.0.1:8001/v1"));
    expect(at("http://a:b@127.0.0.1:8000/v1/")).toBe(at("http://127.0.0.1:8000/v1"));
  });

  it.each([
    ["https://api.openai.com/v1", "https://api.openai.com/v1"],
    ["https://u:p@host/v1", "https://host/v1"],
    ["http://token@10.0.0.1:8080/v1/", "http://10.0.0.1:8080/v1"],
    ["https://host/v1?api-key=secret", "https://host/v1"],
    ["not a url", "not a url"],
  ])("withoutCredentials(%s) is %s", (url, stripped) => {
    expect(withoutCredentials(url)).toBe(stripped);
  });
});
