import { describe, expect, it } from "vitest";
import type { ModelCaller, Scorer, SolverFn } from "../core/eval.js";
import { createSecretRedactor } from "../core/secrets.js";
import { SolverError } from "../solvers/solver-error.js";
import type { StepDiscard, StepDraft } from "../store/types.js";
import { AttemptAborted } from "./attempt-signal.js";
import { executeKey, type KeyTask } from "./execute-key.js";

const record = { sample: { id: "q1", input: "2+2?", target: "4" }, fingerprint: "fp:q1" };
const exact: Scorer = { name: "exact", score: ({ output }) => (output === "4" ? 1 : 0) };

function task(solver: SolverFn, overrides: Partial<KeyTask> = {}): KeyTask {
  return {
    key: { sampleId: "q1", epoch: 2 },
    record,
    solver,
    scorers: [exact],
    runId: "r_1",
    abort: new AbortController().signal,
    ...overrides,
  };
}

describe("executeKey", () => {
  it("a solved and scored key is a scored draft of the key, with what the solver reported", async () => {
    const draft = await executeKey(
      task(() => ({ output: "4", usage: { inputTokens: 3, outputTokens: 1, costUsd: 0.01 } })),
    );
    expect(draft).toMatchObject({
      sampleId: "q1",
      epoch: 2,
      status: "scored",
      output: "4",
      scores: [{ scorer: "exact", value: 1 }],
      usage: { inputTokens: 3, outputTokens: 1, costUsd: 0.01 },
      error: null,
      fingerprint: "fp:q1",
      provenance: { kind: "executed" },
      retries: 0,
    });
  });

  it.each<[string, () => unknown, object]>([
    [
      "a solver that throws",
      () => Promise.reject(new Error("boom")),
      { type: "solver", message: "boom" },
    ],
    [
      "a provider error marked as misconfiguration",
      () => {
        const configuration = { cause: "http-status" as const, url: "http://x/v1", status: 401 };
        throw new SolverError("provider", "HTTP 401", { status: 401, configuration });
      },
      {
        type: "provider",
        status: 401,
        message: "HTTP 401",
        configuration: { cause: "http-status", url: "http://x/v1", status: 401 },
      },
    ],
  ])("%s: an error draft, not an exception", async (_, solve, error) => {
    const draft = await executeKey(task(solve as SolverFn));
    expect(draft).toMatchObject({ status: "error", output: null, scores: [], error });
  });

  it("the attempt's timeout is an error draft of type timeout", async () => {
    const draft = await executeKey(
      task(
        (_, ctx) =>
          new Promise((_resolve, reject) =>
            ctx.signal.addEventListener("abort", () => reject(new Error("aborted"))),
          ),
        {
          timeoutMs: 1,
        },
      ),
    );
    expect(draft).toMatchObject({
      status: "error",
      error: { type: "timeout", message: "timed out after 1 ms" },
    });
  });

  it("an abort by the run throws: the attempt is not recorded", async () => {
    const run = new AbortController();
    const solver: SolverFn = () => {
      run.abort(new AttemptAborted("aborted by the run"));
      return new Promise(() => {});
    };
    await expect(executeKey(task(solver, { abort: run.signal }))).rejects.toBeInstanceOf(
      AttemptAborted,
    );
  });

  it("the run's secrets are blanked in what the solver returned and named on the draft", async () => {
    const redactor = createSecretRedactor([
      { name: "OPENAI_API_KEY", value: "sk-live-0123456789" },
    ]);
    const draft = await executeKey(
      task(
        () => ({ output: "key sk-live-0123456789", transcript: { said: "sk-live-0123456789" } }),
        { redactor },
      ),
    );
    expect(JSON.stringify(draft)).not.toContain("sk-live-0123456789");
    expect(draft.redacted).toEqual(["OPENAI_API_KEY"]);
  });

  it("a ctx.chat call's own key and headers are secrets of the attempt from that call on", async () => {
    const KEY = "sk-call-0123456789";
    const HEADER = "hdr-call-4242";
    // An endpoint that echoes the credentials it was sent.
    const callModel: ModelCaller = async (call) => ({
      content: `you sent ${call.apiKey} and ${call.headers?.["X-Team"]}`,
      model: "m",
    });
    const written: (StepDraft | StepDiscard)[] = [];
    const solver: SolverFn = async (_sample, ctx) => {
      const before = await ctx.step("before", {}, () => "nothing yet");
      const first = await ctx.chat({ apiKey: KEY, headers: { "X-Team": HEADER }, messages: [] });
      const tool = await ctx.step("tool", { seen: first.content }, () => first.content);
      throw new Error(`${before}; ${tool}`);
    };
    const draft = await executeKey(
      task(solver, {
        callModel,
        redactor: createSecretRedactor([]),
        journal: { entries: [], write: async (entry) => void written.push(entry) },
      }),
    );
    expect(draft.error?.message).toBe("nothing yet; you sent [redacted] and [redacted]");
    expect(draft.redacted).toEqual(["ctx.chat apiKey", "ctx.chat header x-team"]);
    expect(written.map((entry) => "name" in entry && entry.name)).toEqual([
      "before",
      "chat",
      "tool",
    ]);
    for (const entry of written) {
      expect(JSON.stringify(entry)).not.toContain(KEY);
      expect(JSON.stringify(entry)).not.toContain(HEADER);
    }
    expect(written[1]).toMatchObject({ redacted: ["ctx.chat apiKey", "ctx.chat header x-team"] });
  });

  it.each([
    ["without a run redactor", undefined],
    ["with one", createSecretRedactor([{ name: "OPENAI_API_KEY", value: "sk-live-0123456789" }])],
  ])(
    "a ctx.chat key %s is blanked in the output and the scores; a 5-character one is not",
    async (_, redactor) => {
      const callModel: ModelCaller = async (call) => ({
        content: `key ${call.apiKey}`,
        model: "m",
      });
      const solver: SolverFn = async (_sample, ctx) => {
        const long = await ctx.chat({ apiKey: "sk-solver-987654", messages: [] });
        const short = await ctx.chat({ apiKey: "abcde", messages: [] });
        return `${long.content} ${short.content}`;
      };
      const judge: Scorer = {
        name: "judge",
        score: async ({ ctx }) => {
          const reply = await ctx.chat({ apiKey: "sk-judge-123456", messages: [] });
          return { value: 1, explanation: reply.content };
        },
      };
      const draft = await executeKey(task(solver, { callModel, redactor, scorers: [judge] }));
      expect(draft.output).toBe("key [redacted] key abcde");
      expect(draft.scores[0]).toMatchObject({ explanation: "key [redacted]" });
      expect(draft.redacted).toEqual(["ctx.chat apiKey"]);
    },
  );
});
