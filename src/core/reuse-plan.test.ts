import { describe, expect, it } from "vitest";
import { fingerprintSample } from "./fingerprint.js";
import {
  planReuse,
  reusableStatus,
  ReuseSource,
  reusedDraft,
  type ReusePlan,
  type ReusePlanInput,
} from "./reuse-plan.js";
import type { Attempt, Sample, SampleRecord } from "./types.js";

const record = (sample: Sample): SampleRecord => ({
  sample,
  fingerprint: fingerprintSample(sample),
});
const q = (id: string, input = `question ${id}`) => record({ id, input, target: `answer ${id}` });

function attempt(r: SampleRecord, epoch: number, n: number, status: Attempt["status"]): Attempt {
  return {
    runId: "r_a",
    sampleId: r.sample.id,
    epoch,
    attempt: n,
    status,
    output: "the answer",
    scores: [
      { scorer: "includes", value: 1 },
      { scorer: "old", value: 0 },
    ],
    usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.01 },
    transcript: null,
    error: status === "error" ? { type: "provider", message: "down" } : null,
    startedAt: "2026-01-01T00:00:00.000Z",
    completedAt: "2026-01-01T00:00:01.000Z",
    durationMs: 1000,
    fingerprint: r.fingerprint,
    provenance: { kind: "executed" },
    retries: 0,
  };
}

const [a, b, c] = [q("a"), q("b"), q("c")];
type Input = Omit<ReusePlanInput, "folded"> & {
  sourceSamples: SampleRecord[];
  sourceAttempts: Attempt[];
};

/** The plan of `input`, its source folded one attempt and one sample a page, as pages would be. */
function planOf(input: Input): ReusePlan {
  const folded = new ReuseSource(input.samples, input.epochs);
  for (const a of input.sourceAttempts) folded.addAttempts([a]);
  for (const r of input.sourceSamples) folded.addSnapshot([{ ...r, sampleId: r.sample.id }]);
  if (folded.anyChanged()) for (const r of input.sourceSamples) folded.addChanged([r]);
  return planReuse({ ...input, folded });
}

/** The drafts a plan's origins are recorded as: the source attempts they name, per `input`. */
const draftsOf = (planned: ReusePlan, input: Input) =>
  planned.origins.map((o) =>
    reusedDraft(
      input.sourceAttempts.find(
        (a) => a.sampleId === o.sampleId && a.epoch === o.epoch && a.attempt === o.attempt,
      )!,
      input,
    ),
  );

const base: Input = {
  source: "r_a",
  requested: "latest",
  blockers: [],
  samples: [a, b, c],
  epochs: 2,
  sourceSamples: [a, b, c],
  sourceAttempts: [],
  scorers: ["includes"],
  rescore: [],
};

describe("planReuse", () => {
  it("reuses scored outcomes only: errors, changed, new and never-run keys execute, each counted under why", () => {
    const changed = q("b", "question b, edited");
    const input: Input = {
      ...base,
      samples: [a, changed, c, q("d")],
      sourceAttempts: [
        attempt(a, 1, 1, "error"),
        attempt(a, 1, 2, "scored"),
        attempt(a, 2, 1, "scored"),
        attempt(b, 1, 1, "scored"),
        attempt(c, 1, 1, "error"),
      ],
    };
    const plan = planOf(input);
    expect(plan.reused).toBe(2);
    expect(draftsOf(plan, input).map((d) => [d.sampleId, d.epoch, d.provenance])).toEqual([
      ["a", 1, { kind: "imported", source: "run:r_a#2" }],
      ["a", 2, { kind: "imported", source: "run:r_a#1" }],
    ]);
    expect(plan.origins).toEqual([
      { sampleId: "a", epoch: 1, attempt: 2 },
      { sampleId: "a", epoch: 2, attempt: 1 },
    ]);
    // The removed scorer's score is left out; the rest of the attempt is the source's.
    expect(draftsOf(plan, input)[0]).toMatchObject({
      status: "scored",
      scores: [{ scorer: "includes", value: 1 }],
      error: null,
      retries: 0,
      usage: { costUsd: 0.01 },
    });
    expect(plan.notReused).toEqual([
      { reason: "new sample", keys: 2 },
      { reason: "sample changed: input", keys: 2 },
      { reason: "not executed in the source", keys: 1 },
      { reason: "source outcome is an error", keys: 1 },
    ]);
  });

  it("reuses nothing when the identity differs, every key under the blockers", () => {
    const plan = planOf({
      ...base,
      blockers: ['solver.model: "m1" → "m2"'],
      sourceAttempts: [attempt(a, 1, 1, "scored")],
    });
    expect(plan).toMatchObject({
      reused: 0,
      origins: [],
      notReused: [{ reason: 'solver.model: "m1" → "m2"', keys: 6 }],
    });
  });

  it("records an output whose scorers changed as awaiting them: a scorer error the run scores", () => {
    const input: Input = {
      ...base,
      epochs: 1,
      samples: [a],
      scorers: ["includes", "exact"],
      rescore: ["exact"],
      sourceAttempts: [attempt(a, 1, 1, "scored")],
    };
    const plan = planOf(input);
    expect(plan).toMatchObject({ reused: 1, rescored: 1 });
    expect(draftsOf(plan, input)[0]).toMatchObject({
      status: "error",
      scores: [{ scorer: "includes", value: 1 }],
      error: {
        type: "scorer",
        scorer: "exact",
        message: "reused from run r_a; not scored yet by exact",
      },
    });
  });

  it("reuses a limited outcome with its limit", () => {
    const limited = {
      ...attempt(a, 1, 1, "scored"),
      limit: { limit: "turns" as const, value: 3, used: 3 },
    };
    const input: Input = { ...base, epochs: 1, samples: [a], sourceAttempts: [limited] };
    expect(draftsOf(planOf(input), input)[0]?.limit).toEqual({ limit: "turns", value: 3, used: 3 });
  });

  it("holds the reuse rule in one place: scored outcomes, never errors", () => {
    expect(reusableStatus("scored")).toBe(true);
    expect(reusableStatus("error")).toBe(false);
  });
});
