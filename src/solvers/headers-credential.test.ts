import { describe, expect, it } from "vitest";
import { headersCredential } from "./headers-credential.js";

describe("headersCredential", () => {
  it("is the key however it is sent, and the other headers by lowercase name", () => {
    const bearer = headersCredential({
      Authorization: "Bearer sk-1",
      "content-type": "application/json",
      "User-Agent": "ai-sdk/openai",
      "OpenAI-Project": "p",
    });
    expect(bearer).toBe('["sk-1",[["openai-project","p"]]]');
    expect(headersCredential({ "x-api-key": "sk-1", "anthropic-version": "2023-06-01" })).toBe(
      '["sk-1",[]]',
    );
    expect(headersCredential({ "api-key": "sk-1" })).toBe('["sk-1",[]]');
    expect(headersCredential({ "openai-project": "p", authorization: "bearer sk-1" })).toBe(bearer);
  });

  it("tells keys and extra headers apart, keeps an Authorization that is no bearer token, skips what is not text", () => {
    expect(headersCredential({ authorization: "Bearer sk-2" })).not.toBe(
      headersCredential({ authorization: "Bearer sk-1" }),
    );
    expect(headersCredential({ authorization: "Basic dTpw" })).toBe(
      '[null,[["authorization","Basic dTpw"]]]',
    );
    expect(headersCredential({ "x-org": "a", "x-api-key": "k", missing: undefined })).toBe(
      '["k",[["x-org","a"]]]',
    );
  });

  it("is undefined for headers that carry no credential", () => {
    expect(headersCredential({})).toBeUndefined();
    expect(headersCredential({ "content-type": "application/json" })).toBeUndefined();
  });
});
