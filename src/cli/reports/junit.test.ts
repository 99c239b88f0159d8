import { parse as parseJunit, type Property, type TestCase, type TestSuites } from "junit2json";
import { describe, expect, it } from "vitest";
import type { Attempt, Run } from "../../core/types.js";
import { writeJunit } from "./junit.js";

const run = {
  id: "r_1",
  evalName: "limits",
  createdAt: "2026-01-01T00:00:00.000Z",
  config: { epochs: 1, solver: {} },
} as unknown as Run;

const noRetries = { total: 0, keysRetried: 0, unrecorded: 0 };

/** The whole document `writeJunit` writes for these outcomes, one sample a page. */
async function junit(
  outcomes: readonly Attempt[],
  report: Parameters<typeof writeJunit>[1] = { status: "completed", retries: noRetries },
): Promise<string> {
  const samples = outcomes.map((a) => ({
    sample: { id: a.sampleId, fingerprint: "f" },
    outcomes: [a],
  }));
  const pages = async function* () {
    for (const s of samples) yield [s];
  };
  let xml = "";
  await writeJunit(run, report, pages, 1, async (text) => {
    xml += text;
  });
  return xml;
}

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
    await writeJunit(run, { status: "completed", retries: noRetries }, pages, 1, async (text) => {
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

  it("says the run's retries on the suite, and a test case's attempt number and retries when not first and none", async () => {
    const limit = { limit: "turns" as const, value: 3, used: 3 };
    const xml = await junit(
      [
        outcome("first", {}),
        outcome("resent", { retries: 2 }),
        outcome("again", { attempt: 3, retries: 0 }),
        outcome("failed", { attempt: 2, retries: 1, scores: [{ scorer: "exact", value: 0 }] }),
        outcome("errored", {
          attempt: 2,
          status: "error",
          error: { type: "provider", message: "HTTP 500" },
        }),
        outcome("limited", { limit, attempt: 2, retries: 4 }),
        outcome("unknown", {}), // stored before retries were counted: no `retries`
      ],
      { status: "errored", retries: { total: 129, keysRetried: 3, unrecorded: 1 } },
    );
    expect(xml).toContain(
      '      <property name="stet.limited" value="1"/>\n' +
        '      <property name="stet.retries" value="129"/>\n' +
        '      <property name="stet.keysRetried" value="3"/>\n' +
        '      <property name="stet.retriesUnrecorded" value="1"/>\n' +
        "    </properties>\n",
    );
    const props = (...lines: string[]) =>
      `      <properties>\n${lines.map((l) => `        <property ${l}/>\n`).join("")}      </properties>\n`;
    const head = (id: string) => `    <testcase name="${id}#1" classname="limits" time="1.000"`;
    expect(xml).toContain(`${head("first")}/>\n`);
    expect(xml).toContain(`${head("unknown")}/>\n`);
    expect(xml).toContain(
      `${head("resent")}>\n${props('name="stet.retries" value="2"')}    </testcase>\n`,
    );
    expect(xml).toContain(
      `${head("again")}>\n${props('name="stet.attempt" value="3"')}    </testcase>\n`,
    );
    expect(xml).toContain(
      `${head("failed")}>\n` +
        props('name="stet.attempt" value="2"', 'name="stet.retries" value="1"') +
        '      <failure message="exact 0 &lt; 1" type="score">',
    );
    expect(xml).toContain(
      `${head("errored")}>\n${props('name="stet.attempt" value="2"')}      <error message="provider: HTTP 500"`,
    );
    expect(xml).toContain(
      `${head("limited")}>\n` +
        props(
          'name="stet.limit" value="turns 3 (used 3)"',
          'name="stet.attempt" value="2"',
          'name="stet.retries" value="4"',
        ) +
        "    </testcase>\n",
    );
    // A JUnit parser as CI reporters use (junit2json, xml2js underneath) reads them back.
    const suite = ((await parseJunit(xml)) as TestSuites).testsuite![0]!;
    expect(suite.properties).toContainEqual({ name: "stet.keysRetried", value: 3 });
    // junit2json reads a test case's properties too, though its type does not say so.
    const propsOf = (c: TestCase & { properties?: Property[] }) =>
      (c.properties ?? []).map((p) => `${p.name}=${p.value}`);
    expect(Object.fromEntries((suite.testcase ?? []).map((c) => [c.name, propsOf(c)]))).toEqual({
      "first#1": [],
      "resent#1": ["stet.retries=2"],
      "again#1": ["stet.attempt=3"],
      "failed#1": ["stet.attempt=2", "stet.retries=1"],
      "errored#1": ["stet.attempt=2"],
      "limited#1": ["stet.limit=turns 3 (used 3)", "stet.attempt=2", "stet.retries=4"],
      "unknown#1": [],
    });
  });
});
