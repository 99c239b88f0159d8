import { onTestFinished } from "vitest";
import { keyString } from "../../src/core/keys.js";
import type { SolverFn } from "../../src/core/eval.js";
import { defineEval } from "../../src/eval/define-eval.js";
import { scorers } from "../../src/scorers/index.js";
import type { DatasetRow, Eval } from "../../src/eval/types.js";
import { createApp, type AppOptions } from "../../src/server/create-app.js";
import { createEvalRegistry } from "../../src/runs/eval-registry.js";
import { ExecutionRegistry } from "../../src/server/executions.js";
import type { Store } from "../../src/store/types.js";
import { tempStore } from "./temp-store.js";

/**
 * A function-solver eval over `n` additions; `calls` counts solver calls per `id#epoch`. Each
 * call costs $0.001, or what `costOf` says (undefined: tokens used, no price known).
 */
export function additionEval(
  options: {
    name?: string;
    n?: number;
    delayMs?: number;
    epochs?: number;
    concurrency?: number;
    costOf?: (sampleId: string) => number | undefined;
  } = {},
) {
  const calls = new Map<string, number>();
  const delayMs = options.delayMs ?? 0;
  const solver: SolverFn = async (sample, ctx) => {
    const key = `${sample.id}#${ctx.epoch}`;
    calls.set(key, (calls.get(key) ?? 0) + 1);
    if (delayMs > 0) await abortableDelay(delayMs, ctx.signal);
    const [a, b] = String(sample.input).split("+").map(Number);
    const sum = (a ?? 0) + (b ?? 0);
    return {
      output: sum % 5 === 0 ? "wrong" : String(sum),
      usage: usageFor(options.costOf ? options.costOf(sample.id) : 0.001),
    };
  };
  const ev = defineEval<DatasetRow>({
    name: options.name ?? "addition",
    dataset: Array.from({ length: options.n ?? 6 }, (_, i) => ({
      id: `q${String(i).padStart(2, "0")}`,
      input: `${i}+${i + 1}`,
      target: String(2 * i + 1),
    })),
    solver,
    scorers: [scorers.exact()],
    epochs: options.epochs ?? 1,
    concurrency: options.concurrency ?? 2,
  });
  return { ev, calls };
}

function usageFor(costUsd: number | undefined) {
  return costUsd === undefined
    ? { inputTokens: 3, outputTokens: 1 }
    : { inputTokens: 3, outputTokens: 1, costUsd };
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

/** An app over a fresh temp SQLite store with the given evals registered. */
export function testApp(evals: Eval[] = [], options: Partial<AppOptions> = {}) {
  const t = tempStore();
  const executions = new ExecutionRegistry();
  const app = createApp({
    store: t.store,
    evals: createEvalRegistry(
      evals.map((ev) => ({ eval: ev, path: `/virtual/${ev.name}.ts`, baseDir: t.dir })),
    ),
    executions,
    pollMs: 50,
    graceMs: 5_000,
    ...options,
  });
  const request = (path: string, init?: RequestInit) => app.request(path, init);
  const post = (path: string, body?: unknown) =>
    app.request(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const json = async <T = Record<string, unknown>>(path: string) => {
    const res = await app.request(path);
    return { status: res.status, body: (await res.json()) as T };
  };
  return {
    app,
    store: t.store,
    dir: t.dir,
    path: t.path,
    executions,
    request,
    post,
    json,
    cleanup: async () => {
      executions.abortAll();
      await executions.idle();
      await t.cleanup();
    },
  };
}

/** `testApp`, closed (executions aborted, store removed) when the current test finishes. */
export function setupTestApp(...args: Parameters<typeof testApp>) {
  const t = testApp(...args);
  onTestFinished(t.cleanup);
  return t;
}

/**
 * Counts computed straight from the stored attempts, independently of the server's code (and of
 * src/core/outcomes.ts): of the attempts for a sample's current fingerprint, a key is done when
 * one of them is scored, and errored when it has only errors.
 */
export async function storedCounts(store: Store, runId: string) {
  const run = await store.runs.get(runId);
  const samples = await store.reads.getSamples(runId);
  const attempts = await store.reads.listAttempts(runId);
  const fingerprints = new Map(samples.map((r) => [r.sample.id, r.fingerprint]));
  const current = attempts.filter((a) => fingerprints.get(a.sampleId) === a.fingerprint);
  const keysWith = (status: string) =>
    new Set(current.filter((a) => a.status === status).map((a) => `${a.sampleId}#${a.epoch}`));
  const scored = keysWith("scored");
  const errored = [...keysWith("error")].filter((k) => !scored.has(k)).length;
  const total = samples.length * (run?.config.epochs ?? 1);
  return { total, done: scored.size, errored, remaining: total - scored.size };
}

/** The keys (`id#epoch`) that have a scored attempt. */
export async function scoredKeys(store: Store, runId: string): Promise<Set<string>> {
  const attempts = await store.reads.listAttempts(runId);
  return new Set(attempts.filter((a) => a.status === "scored").map((a) => keyString(a)));
}

/**
 * An eval whose solver calls wait for tickets: `allow(k)` lets k more calls finish, so a test
 * can freeze a run mid-way (in-flight calls block) and check its state. Calls count per key.
 */
export function gatedEval(
  options: {
    name?: string;
    n?: number;
    concurrency?: number;
    variant?: string;
    /** What each attempt costs (its usage); none by default. */
    costUsd?: number;
  } = {},
) {
  const calls = new Map<string, number>();
  let allowed = 0;
  let used = 0;
  const waiting: (() => void)[] = [];
  const allow = (k = Number.POSITIVE_INFINITY) => {
    allowed += k;
    while (waiting.length > 0 && used < allowed) {
      used++;
      waiting.shift()!();
    }
  };
  const ticket = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (used < allowed) {
        used++;
        return resolve();
      }
      const go = () => resolve();
      waiting.push(go);
      signal.addEventListener(
        "abort",
        () => {
          const i = waiting.indexOf(go);
          if (i >= 0) waiting.splice(i, 1);
          reject(signal.reason as Error);
        },
        { once: true },
      );
    });
  const solver: SolverFn = async (sample, ctx) => {
    const key = `${sample.id}#${ctx.epoch}`;
    calls.set(key, (calls.get(key) ?? 0) + 1);
    await ticket(ctx.signal);
    const output = String(sample.target);
    const { costUsd } = options;
    return costUsd === undefined
      ? output
      : { output, usage: { inputTokens: 1, outputTokens: 1, costUsd } };
  };
  const ev = defineEval<DatasetRow>({
    name: options.name ?? "gated",
    dataset: Array.from({ length: options.n ?? 10 }, (_, i) => ({
      id: `g${String(i).padStart(2, "0")}`,
      input: `question ${i}${i === 0 ? (options.variant ?? "") : ""}`,
      target: `answer ${i}`,
    })),
    solver,
    scorers: [scorers.exact()],
    concurrency: options.concurrency ?? 2,
  });
  return { ev, calls, allow, waiting: () => waiting.length };
}

/** Polls `probe` until it returns a value (30 s at most: a hang guard, not a bound). */
export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
