import { createHash } from "node:crypto";
import { PINNED_FINGERPRINTS as PINNED } from "../../test/helpers/pinned-fingerprints.js";
import { canonicalJson } from "./json.js";
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

describe("fingerprintSample: the fingerprints of runs started before", () => {
  const nodeHash = (text: string) => createHash("sha256").update(text).digest("hex");

  it.each(PINNED)("keeps %j's fingerprint", (sample, fingerprint) => {
    expect(fingerprintSample(sample)).toBe(fingerprint);
    expect(fingerprintSample(sample, nodeHash)).toBe(fingerprint);
  });

  it("is the hash of canonicalJson({ input, target, metadata }) for any JSON content", () => {
    // A seeded walk through JSON values: strings with escapes and astral characters, numbers
    // at the edges of their notation, nesting, key orders, absent and undefined members.
    let seed = 34;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    const strings = ["", "a", "é", "🎲", "\ud83d", '"\\/', "\n\t\u0001", "\u2028", "數學"];
    const numbers = [0, -0, 1, -1.5, 1e21, 1e-7, 0.1, 2 ** 53, -(2 ** 31)];
    const value = (depth: number): unknown => {
      const kind = depth > 3 ? Math.floor(next() * 4) : Math.floor(next() * 6);
      if (kind === 0) return pick(strings) + pick(strings);
      if (kind === 1) return pick(numbers);
      if (kind === 2) return pick([true, false, null]);
      if (kind === 3) return pick(strings);
      if (kind === 4) return Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1));
      const object: Record<string, unknown> = {};
      for (let i = Math.floor(next() * 4); i > 0; i -= 1) {
        object[pick(["b", "a", "é", "", "10", "2", "input", "metadata"]) + pick(strings)] =
          next() < 0.1 ? undefined : value(depth + 1);
      }
      return object;
    };
    for (let i = 0; i < 2_000; i += 1) {
      const sample: Record<string, unknown> = { input: value(0) };
      if (next() < 0.6) sample.target = next() < 0.1 ? undefined : value(0);
      if (next() < 0.5) sample.metadata = value(4) ?? {};
      const { input, target, metadata } = sample;
      const before = nodeHash(canonicalJson({ input, target, metadata }));
      expect(fingerprintSample(sample as never, nodeHash)).toBe(before);
    }
  });
});
