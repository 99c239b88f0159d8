import { afterEach, describe, expect, it } from "vitest";
import { isStetError, type StetError } from "../core/errors.js";
import type { EngineEval, SolverFn } from "../core/eval.js";
import type { RunEvent } from "../core/events.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { resumeRun } from "./resume-run.js";
import { runEval } from "./start-run.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
function store() {
  const t = tempStore();
  cleanups.push(t.cleanup);
  return t.store;
}

const URL = "http://127.0.0.1:9/v1/chat/completions";
const records: SampleRecord[] = Array.from({ length: 40 }, (_, i) => {
  const sample = { id: `q${String(i).padStart(3, "0")}`, input: `question ${i}`, target: "ok" };
  return { sample, fingerprint: fingerprintSample(sample) };
});

/**
 * What a solver throws for a request the endpoint refuses: a plain Error with the fields the
 * engine reads (it knows no solver class), as `solvers.chat` sets them on its SolverError.
 */
function unauthorized(): Error {
  return Object.assign(
    new Error(`POST ${URL} (model m) failed: HTTP 401: Incorrect API key provided`),
    {
      type: "provider",
      status: 401,
      configuration: { cause: "http-status", url: URL, status: 401 },
    },
  );
}

function counting(fail: (sampleId: string) => Error | undefined) {
  let calls = 0;
  const solver: SolverFn = async (sample) => {
    calls++;
    await new Promise((r) => setTimeout(r, 2));
    const error = fail(sample.id);
    if (error) throw error;
    return "ok";
  };
  return { solver, calls: () => calls };
}

function chatEval(solver: SolverFn, overrides: Partial<EngineEval> = {}): EngineEval {
  return {
    name: "endpoint",
    samples: records,
    solver,
    scorers: [{ name: "exact", score: ({ output }) => output === "ok" }],
    epochs: 1,
    reducer: "mean",
    concurrency: 4,
    retries: 0,
    ...overrides,
  };
}

describe("a misconfigured endpoint stops the run early", () => {
  it("stops after 3 samples failed alike, keeps what ran, leaves it interrupted and resumable", async () => {
    const s = store();
    const broken = counting(() => unauthorized());
    const events: RunEvent[] = [];
    const error = await runEval({
      store: s,
      eval: chatEval(broken.solver),
      onEvent: (e) => events.push(e),
    }).catch((e: unknown) => e);

    expect(isStetError(error, "E_ENDPOINT")).toBe(true);
    const { message, details } = error as StetError;
    expect(message).toContain("first 3 samples all failed with the same error");
    expect(message).toContain(`POST ${URL} (model m) failed: HTTP 401: Incorrect API key provided`);
    expect(message).toContain("Check the API key");
    const runId = details!.runId as string;
    expect(details).toMatchObject({ cause: "http-status", url: URL, status: 401 });

    // Stopped dispatching: the first 3 failures and those in flight then, not 40.
    expect(broken.calls()).toBeLessThanOrEqual(3 + 4);
    // In-flight attempts were allowed to finish and are stored: every call is an attempt.
    const stored = await s.reads.listAttempts(runId);
    expect(stored).toHaveLength(broken.calls());
    expect(stored.every((a) => a.error?.configuration?.cause === "http-status")).toBe(true);
    expect(events.find((e) => e.type === "stopping")).toMatchObject({ reason: "misconfigured" });
    expect(events.some((e) => e.type === "run-finished")).toBe(false);

    const run = await s.runs.get(runId);
    expect(run).toMatchObject({ status: "interrupted", owner: null });
    expect(run!.note).toContain("stopped early: the first 3 samples failed alike");
    expect(run!.note).toContain("HTTP 401: Incorrect API key provided");
    expect(details!.remaining).toBe(40);

    const fixed = counting(() => undefined);
    const report = await resumeRun({ store: s, runId, eval: chatEval(fixed.solver) });
    expect(report.status).toBe("completed");
    expect(fixed.calls()).toBe(40);
    expect(await s.reads.listAttempts(runId)).toHaveLength(40 + stored.length);
  });

  it("does not fire when only some samples fail, even with a configuration fault", async () => {
    const s = store();
    const some = counting((id) => (Number(id.slice(1)) % 2 === 1 ? unauthorized() : undefined));
    const report = await runEval({ store: s, eval: chatEval(some.solver) });
    expect(report.status).toBe("errored");
    expect(some.calls()).toBe(40);
    expect(report.counts).toMatchObject({ scored: 20, errored: 20 });
  });

  it("does not fire when the first samples fail with different causes", async () => {
    const s = store();
    // A 404 that names the sample: the same status, but not the same error.
    const notFound = (id: string) =>
      Object.assign(new Error(`HTTP 404: no document for ${id}`), {
        type: "provider",
        status: 404,
        configuration: { cause: "http-status", url: URL, status: 404 },
      });
    const failing = counting((id) => (id < "q005" ? notFound(id) : undefined));
    const report = await runEval({
      store: s,
      eval: chatEval(failing.solver, { concurrency: 1 }),
    });
    expect(report.status).toBe("errored");
    expect(failing.calls()).toBe(40);
    expect(report.counts).toMatchObject({ scored: 35, errored: 5 });
  });

  it("judges a resume on its own first attempts", async () => {
    const s = store();
    // The first invocation succeeds on 10 samples, then a signal interrupts it.
    const stop = new AbortController();
    let done = 0;
    const good: SolverFn = async () => {
      if (++done === 10) stop.abort();
      return "ok";
    };
    const first = await runEval({
      store: s,
      eval: chatEval(good, { concurrency: 1 }),
      signal: stop.signal,
    });
    expect(first.status).toBe("interrupted");
    // The key expired meanwhile: the resume stops at once, though the run had successes.
    const broken = counting(() => unauthorized());
    const error = await resumeRun({
      store: s,
      runId: first.runId,
      eval: chatEval(broken.solver),
      // The expired key is played by another solver function: the same eval in all but that.
      allowEvalChange: true,
    }).catch((e: unknown) => e);
    expect(isStetError(error, "E_ENDPOINT")).toBe(true);
    expect(broken.calls()).toBeLessThanOrEqual(7);
    expect((await s.runs.get(first.runId))?.status).toBe("interrupted");
  });
});
