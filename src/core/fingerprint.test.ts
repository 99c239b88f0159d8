import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  contentId,
  contentIdFromFingerprint,
  fingerprintSample,
  sha256Hex,
} from "./fingerprint.js";

const base = { input: [{ role: "user", content: "2+2" }], target: "4", metadata: { a: 1, b: 2 } };

describe("fingerprintSample", () => {
  it("is the sha256 hex of the canonical content", () => {
    expect(fingerprintSample({ input: "2+2", target: "4" })).toBe(
      "ac085f1f7a4e0e7a34f5763b70cdcd713bffdabaa9d11bbe4eec64db90dd3ecd",
    );
  });

  it("ignores key order at every depth", () => {
    const reordered = {
      metadata: { b: 2, a: 1 },
      target: "4",
      input: [{ content: "2+2", role: "user" }],
    };
    expect(fingerprintSample(reordered)).toBe(fingerprintSample(base));
  });

  it("ignores the id", () => {
    expect(fingerprintSample({ ...base, id: "x" } as typeof base)).toBe(fingerprintSample(base));
  });

  it.each([
    ["input", { ...base, input: "2+3" }],
    ["target", { ...base, target: "5" }],
    ["absent target", { input: base.input, metadata: base.metadata }],
    ["metadata", { ...base, metadata: { a: 1, b: 3 } }],
    ["absent metadata", { input: base.input, target: base.target }],
    ["a number for a string", { ...base, target: 4 }],
  ])("changes with %s", (_, changed) => {
    expect(fingerprintSample(changed)).not.toBe(fingerprintSample(base));
  });
});

describe("sha256Hex", () => {
  it.each(["", "abc", "naïve — 数学 🎲", '{"input":"2+2"}'])(
    "equals node:crypto's digest for %j",
    (text) => {
      expect(sha256Hex(text)).toBe(createHash("sha256").update(text).digest("hex"));
    },
  );

  it("can be swapped for node:crypto's without changing a fingerprint", () => {
    const nodeHash = (text: string) => createHash("sha256").update(text).digest("hex");
    const unicode = { input: "¿Cuánto es 2+2? 🤔", metadata: { nested: [{ ü: null }] } };
    for (const sample of [base, unicode]) {
      expect(fingerprintSample(sample, nodeHash)).toBe(fingerprintSample(sample));
    }
  });
});

describe("contentId", () => {
  it("is the first 16 hex characters of the fingerprint", () => {
    expect(contentId(base)).toMatch(/^[0-9a-f]{16}$/);
    expect(contentId(base)).toBe(contentIdFromFingerprint(fingerprintSample(base)));
    expect(fingerprintSample(base).startsWith(contentId(base))).toBe(true);
  });

  it("depends on content only", () => {
    expect(contentId({ ...base, metadata: { b: 2, a: 1 } })).toBe(contentId(base));
    expect(contentId({ ...base, input: "other" })).not.toBe(contentId(base));
  });
});
