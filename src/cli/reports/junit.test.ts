import { describe, expect, it } from "vitest";
import type { Attempt, Run } from "../../core/types.js";
import { writeJunit } from "./junit.js";

const run = {
  id: "r_1",
  evalName: "limits",
  createdAt: "2026-01-01T00:00:00.000Z",
  config: { epochs: 1, solver: {} },
} as unknown as Run;

function outcome(sampleId: string, over: Partial<Attempt>): Attempt {
  return {
    runId: "r_1",
    sampleId,
    epoch: 1,
    attempt: 1,
    status: "scored",
    output: "so far",
    scores: [{ scorer: "exact", value: 1 }],
    usage: null,
    transcript: null,
    error: null,
    startedAt: "2026-01-01T00:00:00.000Z",
    completedAt: "2026-01-01T00:00:01.000Z",
    durationMs: 1000,
    fingerprint: "f",
    provenance: { kind: "executed" },
    ...over,
  };
}

describe("writeJunit", () => {
  it("a limited outcome is a test case scored by its scores, never an error, with its limit as a property", async () => {
    const limit = { limit: "costUsd" as const, value: 0.01, used: 0.0126 };
    const outcomes = [
      outcome("a", { limit }),
      outcome("b", { limit, scores: [{ scorer: "exact", value: 0 }] }),
      outcome("c", { status: "error", error: { type: "solver", message: "boom" } }),
    ];
    // Two pages, as a streamed read gives them: the totals come first all the same.
    const samples = ["a", "b", "c"].map((id, i) => ({
      sample: { id, fingerprint: "f" },
      outcomes: [outcomes[i]!],
    }));
    const pages = async function* () {
      yield samples.slice(0, 2);
      yield samples.slice(2);
    };
    let xml = "";
    await writeJunit(run, "completed", pages, 1, async (text) => {
      xml += text;
    });
    expect(xml).toContain('tests="3" failures="1" errors="1" skipped="0"');
    expect(xml).toContain('<property name="stet.limited" value="2"/>');
    expect(xml).toContain(
      '<testcase name="a#1" classname="limits" time="1.000">\n      <properties>\n' +
        '        <property name="stet.limit" value="costUsd 0.01 (used 0.0126)"/>\n' +
        "      </properties>\n    </testcase>",
    );
    expect(xml).toMatch(/name="b#1"[^]*stet\.limit[^]*<failure message="exact 0 &lt; 1"/);
    expect(xml).toContain('<error message="solver: boom" type="solver">');
  });
});
