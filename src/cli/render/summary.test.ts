import { describe, expect, it } from "vitest";
import { formatCost } from "./format.js";
import { limitedNote, renderErrors, renderRetries, retriesText } from "./summary.js";

describe("renderErrors", () => {
  it("quotes the examples with their keys and says how many more", () => {
    expect(
      renderErrors({
        type: "solver",
        count: 12,
        examples: [
          { sampleId: "s3", epoch: 1, message: "tool failed" },
          { sampleId: "s3", epoch: 2, message: "tool failed again" },
          { sampleId: "s7", epoch: 1, message: "tool failed" },
        ],
      }),
    ).toBe("solver 12 — s3: tool failed; s3#2: tool failed again; s7: tool failed; … and 9 more");
  });

  it("says nothing more when every errored key is quoted", () => {
    expect(
      renderErrors({
        type: "timeout",
        count: 1,
        examples: [{ sampleId: "a", epoch: 1, message: "timed out after 10ms" }],
      }),
    ).toBe("timeout 1 — a: timed out after 10ms");
  });
});

describe("formatCost", () => {
  it.each([
    [{ costUsd: 1.5, unpriced: 0 }, "$1.50", "$1.50"],
    [{ costUsd: 0, unpriced: 0 }, "$0.00", "$0.00"],
    [{ costUsd: 0.25, unpriced: 3 }, "≥ $0.2500", "≥ $0.2500 (3 attempts unpriced)"],
    // A sub-cent total keeps its significant digits: never "$0.0000" for a spend that happened.
    [{ costUsd: 0.0000135, unpriced: 0 }, "$0.0000135", "$0.0000135"],
    [{ costUsd: null, unpriced: 1 }, "unknown", "unknown (1 attempt unpriced)"],
  ])("%j → %s, counted %s; never $0 for an unpriced total", (total, plain, counted) => {
    expect(formatCost(total)).toBe(plain);
    expect(formatCost(total, true)).toBe(counted);
  });
});

describe("renderRetries", () => {
  it.each([
    [
      { total: 129, keysRetried: 3, unrecorded: 0 },
      "retries  129 requests re-sent (all attempts) · 3 keys needed more than one attempt",
    ],
    [
      { total: 1, keysRetried: 1, unrecorded: 0 },
      "retries  1 request re-sent (all attempts) · 1 key needed more than one attempt",
    ],
    [
      { total: 0, keysRetried: 4, unrecorded: 16 },
      "retries  0 requests re-sent (all attempts) · 4 keys needed more than one attempt · " +
        "16 attempts stored before retries were counted",
    ],
  ])("%j → %s", (retries, line) => {
    expect(renderRetries(retries)).toBe(line);
    // The reports (Markdown, HTML) say the same words after their own label.
    expect(`retries  ${retriesText(retries)}`).toBe(line);
  });
});

describe("limitedNote", () => {
  it("counts the scored keys a limit ended, by limit, apart from the errored ones", () => {
    const counts = { total: 10, scored: 8, errored: 2, remaining: 2, limited: 3 };
    expect(limitedNote({ counts, limitedBy: { costUsd: 2, turns: 1 } })).toBe(
      " (3 limited: costUsd 2, turns 1)",
    );
    expect(limitedNote({ counts: { ...counts, limited: 0 } })).toBe("");
  });
});
