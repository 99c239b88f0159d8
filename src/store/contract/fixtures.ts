import { randomUUID } from "node:crypto";
import type {
  AttemptDraft,
  Key,
  OwnerIdentity,
  RunConfig,
  SampleRecord,
  ScoringDraft,
} from "../../core/types.js";
import type { Store } from "../types.js";

/** What an adapter's test file hands the contract suite. */
export interface StoreHarness {
  store: Store;
  /** Opens another, independent instance on the same data, as a second process would. */
  connect(): Promise<Store>;
  /** Closes every store it handed out and removes the data. */
  cleanup(): Promise<void>;
}

/** Lets the contract's describe blocks reach the harness that beforeEach created. */
export interface HarnessRef {
  readonly store: Store;
  connect(): Promise<Store>;
}

export function runConfig(overrides: Partial<RunConfig> = {}): RunConfig {
  return {
    evalName: "arithmetic",
    epochs: 2,
    concurrency: 4,
    retries: 0,
    reducer: "mean",
    solver: { kind: "function", name: "add" },
    scorers: ["exact"],
    ...overrides,
  };
}

export function sampleRecords(ids: string[], version = 1): SampleRecord[] {
  return ids.map((id) => ({
    sample: { id, input: `${id}?`, target: `${id}!`, metadata: { version } },
    fingerprint: fingerprintOf(id, version),
  }));
}

export function fingerprintOf(id: string, version = 1): string {
  return `fp:${id}:v${version}`;
}

export function owner(name = "owner"): OwnerIdentity {
  return { host: `${name}-host`, pid: 4242, token: `${name}-${randomUUID()}` };
}

export function draft(key: Key, overrides: Partial<AttemptDraft> = {}): AttemptDraft {
  return {
    ...key,
    status: "scored",
    output: `answer for ${key.sampleId}`,
    scores: [{ scorer: "exact", value: 1 }],
    usage: { inputTokens: 12, outputTokens: 3, costUsd: 0.0002 },
    transcript: null,
    error: null,
    startedAt: "2025-01-01T00:00:00.000Z",
    completedAt: "2025-01-01T00:00:01.500Z",
    durationMs: 1500,
    fingerprint: fingerprintOf(key.sampleId),
    provenance: { kind: "executed" },
    ...overrides,
  };
}

export function errorDraft(key: Key, overrides: Partial<AttemptDraft> = {}): AttemptDraft {
  return draft(key, {
    status: "error",
    output: null,
    scores: [],
    usage: null,
    error: { type: "provider", message: "HTTP 500 after 3 retries", status: 500 },
    ...overrides,
  });
}

/** Creates a run of `ids` (default s1..s3) owned by a fresh owner. */
export async function newRun(
  store: Store,
  options: {
    id?: string;
    ids?: string[];
    config?: Partial<RunConfig>;
    labels?: Record<string, string>;
  } = {},
) {
  const me = owner();
  const samples = sampleRecords(options.ids ?? ["s1", "s2", "s3"]);
  const run = await store.runs.create({
    id: options.id ?? `run-${randomUUID()}`,
    config: runConfig(options.config),
    samples,
    owner: me,
    ...(options.labels === undefined ? {} : { labels: options.labels }),
  });
  return { run, owner: me, samples };
}

/** `records` as a paged snapshot (`NewRun.samples`), `size` to a page, each after a turn of the event loop. */
export async function* inPages(
  records: readonly SampleRecord[],
  size: number,
): AsyncGenerator<SampleRecord[]> {
  for (let at = 0; at < records.length; at += size) {
    await sleep(0);
    yield records.slice(at, at + size);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A scoring of a key's first attempt, as a rescore would record it. */
export function scoringOf(key: Key, overrides: Partial<ScoringDraft> = {}): ScoringDraft {
  return {
    ...key,
    attempt: 1,
    pass: "p1",
    status: "scored",
    scores: [{ scorer: "exact", value: 0 }],
    rescored: ["exact"],
    scorerConfig: { exact: { kind: "exact" } },
    error: null,
    usage: null,
    scoredAt: "2025-01-02T00:00:00.000Z",
    durationMs: 3,
    ...overrides,
  };
}
