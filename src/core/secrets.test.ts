import { describe, expect, it } from "vitest";
import { createSecretRedactor, declaredSecret } from "./secrets.js";

const RUN = { name: "OPENAI_API_KEY", value: "sk-live-0123456789" };
const CALL = { name: "ctx.chat apiKey", value: "sk-call-0123456789" };

describe("Redactor.with", () => {
  it("gives a redactor that also knows the added secrets, and leaves the first one as it was", () => {
    const run = createSecretRedactor([RUN]);
    const attempt = run.with([CALL]);
    const text = `a ${RUN.value} b ${CALL.value} c ${btoa(CALL.value)}`;
    expect(attempt.text(text)).toEqual({
      value: "a [redacted] b [redacted] c [redacted]",
      found: ["OPENAI_API_KEY", "ctx.chat apiKey"],
    });
    expect(run.text(text).found).toEqual(["OPENAI_API_KEY"]);
  });

  it("builds nothing when every value is known: the same redactor, the first name kept", () => {
    const run = createSecretRedactor([RUN]);
    expect(run.with([])).toBe(run);
    expect(run.with([{ name: "ctx.chat apiKey", value: RUN.value }])).toBe(run);
    const attempt = run.with([CALL]);
    expect(attempt.with([CALL])).toBe(attempt);
    expect(attempt.json({ k: CALL.value }).found).toEqual(["ctx.chat apiKey"]);
  });

  it("makes an empty redactor one that redacts", () => {
    const none = createSecretRedactor([]);
    expect(none.empty).toBe(true);
    const some = none.with([CALL]);
    expect(some.empty).toBe(false);
    expect(some.text(CALL.value).value).toBe("[redacted]");
  });

  it("is given declared secrets: a value under 6 characters is none", () => {
    expect(declaredSecret("ctx.chat apiKey", "abcde")).toEqual([]);
    expect(declaredSecret("ctx.chat apiKey", "abcdef")).toEqual([
      { name: "ctx.chat apiKey", value: "abcdef" },
    ]);
  });
});

describe("Redactor.json", () => {
  const redactor = createSecretRedactor([{ name: "OPENAI_API_KEY", value: "sk-live-123456" }]);

  it("returns a value that holds no secret as it is, without copying it", () => {
    const value = { messages: [{ role: "user", content: "2+2?" }], n: 1, none: null };
    const redaction = redactor.json(value);
    expect(redaction.value).toBe(value);
    expect(redaction.found).toEqual([]);
  });

  it.each([
    [
      "a string deep inside",
      { a: [{ b: ["x", "key sk-live-123456"] }] },
      { a: [{ b: ["x", "key [redacted]"] }] },
    ],
    ["a key", { "sk-live-123456": 1 }, { "[redacted]": 1 }],
    ["its base64 form", ["Basic " + btoa("sk-live-123456")], ["Basic [redacted]"]],
    ["its URL-encoded form", "q=sk-live-123456", "q=[redacted]"],
  ])("finds the secret in %s and copies only then", (_what, value, clean) => {
    const redaction = redactor.json(value as never);
    expect(redaction.value).toEqual(clean);
    expect(redaction.found).toEqual(["OPENAI_API_KEY"]);
  });
});
