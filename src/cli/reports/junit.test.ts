import { describe, expect, it } from "vitest";
import type { RunReport } from "../../core/events.js";
import type { Attempt, Run } from "../../core/types.js";
import { junitXml } from "./junit.js";
import type { ReportData } from "./report-data.js";

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

describe("junitXml", () => {
  it("a limited outcome is a test case scored by its scores, never an error, with its limit as a property", () => {
    const limit = { limit: "costUsd" as const, value: 0.01, used: 0.0126 };
    const outcomes = [
      outcome("a", { limit }),
      outcome("b", { limit, scores: [{ scorer: "exact", value: 0 }] }),
      outcome("c", { status: "error", error: { type: "solver", message: "boom" } }),
    ];
    const data: ReportData = {
      run,
      report: { status: "completed" } as RunReport,
      samples: ["a", "b", "c"].map((id) => ({ sample: { id, input: id }, fingerprint: "f" })),
      outcomes,
    };
    const xml = junitXml(data, 1);
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
