import type { RunReport } from "../../core/events.js";
import { runModel } from "../../core/run-model.js";
import { escapeXml } from "../../core/score-chart.js";
import type { Attempt, Run } from "../../core/types.js";
import type { AttemptHead } from "../../store/types.js";
import type { SampleOutcomes } from "../../evalport/outcome-pages.js";

/** Where a report reads a run's keys: its pages of samples with their outcomes, in key order. */
export type KeyPages = (
  attempts: "whole" | "heads",
) => AsyncIterable<readonly SampleOutcomes<Attempt | AttemptHead>[]>;

/**
 * The run as JUnit XML (the common schema CI systems read), streamed: one `<testsuite>` named
 * after the eval, one `<testcase>` per key (name `sampleId#epoch`, classname the eval, time the
 * outcome's duration in seconds). A scored outcome with a score below `passThreshold` has a
 * `<failure>` naming the scores; an error outcome an `<error>` of its type; a key without an
 * outcome yet is `<skipped>`. An outcome a per-sample limit ended is scored as any other (passed
 * or failed by its scores, never an error) and carries a `stet.limit` property naming the limit,
 * its value and what was used; the suite's `stet.limited` property counts them. An outcome that
 * is not its key's first attempt carries `stet.attempt` (its number), and one whose model calls
 * re-sent requests `stet.retries` (how many); the suite's `stet.retries` and `stet.keysRetried`
 * are the run's (`RunReport.retries`: requests re-sent over every stored attempt and scoring, and
 * keys that needed more than one attempt), with `stet.retriesUnrecorded` when some attempts were
 * stored before retries were counted. The suite and the document carry the totals, counted
 * by a first pass over the outcomes' heads; the second writes each page's test cases as it reads
 * them.
 *
 * @example await writeJunit(run, report, (a) => outcomePages(store, run.id, a), 1, write);
 */
export async function writeJunit(
  run: Run,
  report: Pick<RunReport, "status" | "retries">,
  pages: KeyPages,
  passThreshold: number,
  write: (text: string) => Promise<void>,
): Promise<void> {
  const totals = { tests: 0, failures: 0, errors: 0, skipped: 0, time: 0 };
  let limited = 0;
  await eachKey(run, pages("heads"), (_id, _epoch, a) => {
    const kind = caseKind(a, passThreshold);
    totals.tests++;
    if (kind !== "passed")
      totals[kind === "failure" ? "failures" : kind === "error" ? "errors" : "skipped"]++;
    totals.time += (a?.durationMs ?? 0) / 1000;
    if (a?.limit && a.status === "scored") limited++;
  });
  const counts = (t: typeof totals) =>
    `tests="${t.tests}" failures="${t.failures}" errors="${t.errors}" skipped="${t.skipped}" time="${seconds(t.time * 1000)}"`;
  const name = attr(run.evalName);
  const model = runModel(run.config);
  const head = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="${name}" ${counts(totals)}>`,
    `  <testsuite name="${name}" ${counts(totals)} timestamp="${attr(run.createdAt.slice(0, 19))}" hostname="stet">`,
    `    <properties>`,
    `      <property name="stet.runId" value="${attr(run.id)}"/>`,
    `      <property name="stet.status" value="${attr(report.status)}"/>`,
    ...(model === undefined ? [] : [`      <property name="stet.model" value="${attr(model)}"/>`]),
    `      <property name="stet.passThreshold" value="${passThreshold}"/>`,
    `      <property name="stet.limited" value="${limited}"/>`,
    `      <property name="stet.retries" value="${report.retries.total}"/>`,
    `      <property name="stet.keysRetried" value="${report.retries.keysRetried}"/>`,
    // Attempts stored before retries were counted: `stet.retries` cannot include theirs.
    ...(report.retries.unrecorded > 0
      ? [`      <property name="stet.retriesUnrecorded" value="${report.retries.unrecorded}"/>`]
      : []),
    `    </properties>`,
  ];
  await write(`${head.join("\n")}\n`);
  for await (const page of pages("whole")) {
    let text = "";
    eachKeyOf(run, page, (id, epoch, a) => {
      text += `${testcase(run.evalName, id, epoch, a, caseKind(a, passThreshold), passThreshold)}\n`;
    });
    await write(text);
  }
  await write(`  </testsuite>\n</testsuites>\n`);
}

/** Every key of the snapshot (sample by sample, epochs 1..epochs) with its outcome, if any. */
async function eachKey(
  run: Run,
  pages: AsyncIterable<readonly SampleOutcomes<Attempt | AttemptHead>[]>,
  visit: (sampleId: string, epoch: number, a: Attempt | AttemptHead | undefined) => void,
): Promise<void> {
  for await (const page of pages) eachKeyOf(run, page, visit);
}

function eachKeyOf(
  run: Run,
  page: readonly SampleOutcomes<Attempt | AttemptHead>[],
  visit: (sampleId: string, epoch: number, a: Attempt | AttemptHead | undefined) => void,
): void {
  for (const { sample, outcomes } of page) {
    for (let epoch = 1; epoch <= run.config.epochs; epoch++) {
      visit(
        sample.id,
        epoch,
        outcomes.find((a) => a.epoch === epoch),
      );
    }
  }
}

type CaseKind = "passed" | "failure" | "error" | "skipped";

function caseKind(a: Attempt | AttemptHead | undefined, threshold: number): CaseKind {
  if (a === undefined) return "skipped";
  if (a.status === "error") return "error";
  return belowThreshold(a, threshold).length > 0 ? "failure" : "passed";
}

function belowThreshold(a: Attempt | AttemptHead, threshold: number) {
  return a.scores.filter((s) => typeof s.value === "number" && s.value < threshold);
}

function testcase(
  evalName: string,
  sampleId: string,
  epoch: number,
  a: Attempt | AttemptHead | undefined,
  kind: CaseKind,
  threshold: number,
): string {
  const head = `    <testcase name="${attr(`${sampleId}#${epoch}`)}" classname="${attr(evalName)}" time="${seconds(a?.durationMs ?? 0)}"`;
  const properties = caseProperties(a);
  const open =
    properties.length > 0
      ? `${head}>\n      <properties>\n${properties.map((p) => `        ${p}\n`).join("")}      </properties`
      : head;
  switch (kind) {
    case "passed":
      return properties.length > 0 ? `${open}>\n    </testcase>` : `${open}/>`;
    case "skipped":
      return `${open}>\n      <skipped message="not finished yet"/>\n    </testcase>`;
    case "error": {
      const error = a!.error;
      const message = error ? `${error.type}: ${error.message}` : "error";
      return `${open}>\n      <error message="${attr(message)}" type="${attr(error?.type ?? "error")}">${text(message)}</error>\n    </testcase>`;
    }
    case "failure": {
      const low = belowThreshold(a!, threshold)
        .map((s) => `${s.scorer} ${s.value} < ${threshold}`)
        .join(", ");
      const output = "output" in a! ? a.output : null;
      const body = `output: ${typeof output === "string" ? output : JSON.stringify(output)}`;
      return `${open}>\n      <failure message="${attr(low)}" type="score">${text(body)}</failure>\n    </testcase>`;
    }
  }
}

/** A test case's properties: the limit that ended it, its attempt number and retries, if any. */
function caseProperties(a: Attempt | AttemptHead | undefined): string[] {
  const properties: [name: string, value: string][] = [];
  const limit = a?.limit;
  if (limit) properties.push(["stet.limit", `${limit.limit} ${limit.value} (used ${limit.used})`]);
  if (a !== undefined && a.attempt > 1) properties.push(["stet.attempt", `${a.attempt}`]);
  if (a?.retries) properties.push(["stet.retries", `${a.retries}`]);
  return properties.map(([name, value]) => `<property name="${name}" value="${attr(value)}"/>`);
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

/** XML 1.0 allows neither most C0 controls nor lone surrogates, escaped or not: drop them. */
function xmlChars(value: string): string {
  return value.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    "\uFFFD",
  );
}
const text = (value: string) => escapeXml(xmlChars(value));
/** Attribute values also keep their newlines and tabs as character references. */
const attr = (value: string) =>
  text(value).replace(/\n/g, "&#10;").replace(/\r/g, "&#13;").replace(/\t/g, "&#9;");
