import { describe, expect, it } from "vitest";
import { renderErrors } from "./summary.js";

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
