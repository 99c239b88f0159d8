import type { SampleContent } from "../../src/core/fingerprint.js";

/**
 * Fingerprints as stet computed them before `fingerprintSample` wrote the content member by
 * member (main at f4bbec0: `sha256(canonicalJson({ input, target, metadata }))`): a run started
 * then must find its samples unchanged now, so every byte must stay.
 */
export const PINNED_FINGERPRINTS: [sample: SampleContent, fingerprint: string][] = [
  [
    { input: "question 1", target: "question 1" },
    "69046606d0c32664fd48ae590afa9212fc70a42a5c4162399486eba6a4922db0",
  ],
  [{ input: "2+2" }, "2cd94bc96166f4777e9538dedf96ed08c14efa5cd48a3e1607dc7fa42a9a4d08"],
  [
    { input: "x", metadata: { b: 2, a: 1 } },
    "db97206259496d6c0b1a94a403c4b7a90dc19ad6e4d8f123b7c1b5872b935cc9",
  ],
  [
    {
      input: [{ role: "user", content: "¿Cuánto es 2+2? 🤔" }],
      target: "4",
      metadata: { tags: ["a", "b"], nested: { z: null, y: [1.5, -0, 1e21] } },
    },
    "d5eb9e0f122b85ca8c85158d8b60d7e63e0ce565a5087ce9af133c9c80b95719",
  ],
  [
    { input: { z: 1, a: { d: [true, false], c: '\u2028\u0000"\\' } }, target: { b: 1, a: 2 } },
    "8ae342b10f70e462d62645f29eaa655b1506844a63f6e6c7b4177997aaa168f4",
  ],
  [{ input: 0, target: null }, "c5b4a9d66e52da8269670ce579a6f3b77af643031794f428f55104387e615a98"],
  [
    { input: null, metadata: {} },
    "de2fffe1d2bf4abbb2983eeda220bb098031d790cd0c2f12ee1d9b01e822175a",
  ],
  [{ input: "", target: "" }, "07c86dd7d2a519d8b0f0a3f105b7f049116b1cc43ecd686280af5a123acd9c34"],
  [
    { input: "naïve — 数学 🎲 \ud83d", target: 3.14159 },
    "c06c32356c188aafb1663c5b2bebb9aaa9d351e664e525212c6e350387b85a98",
  ],
  [
    { input: [], target: [[[]]], metadata: { "": "empty key", é: 1, "a b": 2 } },
    "9a5c67b39b0ce82743a08b7cbca5c424c01b15c4d34b671bb5622297af0be8d3",
  ],
];
