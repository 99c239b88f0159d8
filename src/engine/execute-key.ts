import type {
  ModelCall,
  ModelCaller,
  ModelReply,
  Scorer,
  SolverContext,
  SolverFn,
} from "../core/eval.js";
import type { Json } from "../core/json.js";
import { normalizeScore, normalizeSolverReturn } from "../core/normalize.js";
import { configurationFaultSchema, usageSchema } from "../core/schemas.js";
import type { Redactor } from "../core/secrets.js";
import type { AttemptDraft, AttemptError, Key, SampleRecord, Score, Usage } from "../core/types.js";
import type { JournalEntry, StepDiscard, StepDraft, StepError } from "../store/types.js";
import { chatInput, journaledChat, withParts } from "./chat-step.js";
import { StepJournal } from "./step-journal.js";
import { addUsage as addUsages, reusedUsage } from "../core/usage.js";

export interface KeyTask {
  key: Key;
  record: SampleRecord;
  solver: SolverFn;
  scorers: readonly Scorer[];
  /** What `ctx.chat` calls (see SolverContext.chat). */
  callModel?: ModelCaller | undefined;
  runId: string;
  model?: string;
  timeoutMs?: number;
  /** Aborts the attempt at once (second Ctrl-C, grace expired, ownership lost). */
  abort: AbortSignal;
  /** The run's known secrets, replaced in everything the solver and scorers return. */
  redactor?: Redactor | undefined;
  /**
   * Journals `ctx.step` and `ctx.chat` (absent: they run unjournaled). `entries` are the key's
   * open entries to replay; `onDone` learns what the journal replayed once the attempt ends.
   */
  journal?: {
    entries: readonly JournalEntry[];
    /** The key has open entries that are not to be replayed: the first write discards them. */
    discardOpen?: boolean;
    write: (draft: StepDraft | StepDiscard) => Promise<void>;
    onDone?: (journal: StepJournal) => void;
  };
}

/** Thrown when the run aborted an attempt: such an attempt is not recorded, resume re-runs it. */
export class AttemptAborted extends Error {
  override readonly name = "AttemptAborted";
}

export class AttemptTimedOut extends Error {}

/**
 * Executes one key: the solver, then each scorer. Expected failure is data: a throwing solver,
 * a provider error, a timeout or a throwing scorer give an error draft, never an exception; a
 * throwing scorer's draft keeps the other scorers' scores and everything the scorers spent.
 * Only an abort by the run throws (`AttemptAborted`).
 */
export async function executeKey(task: KeyTask): Promise<AttemptDraft> {
  const startedAt = new Date();
  const t0 = performance.now();
  return withTimeout(task, (signal) => attempt(task, signal, startedAt, t0));
}

/** What an attempt's (or a scoring's) timeout and abort need from its task. */
interface Bounded {
  timeoutMs?: number | undefined;
  abort: AbortSignal;
}

/**
 * Runs `work` with a signal that fires on the run's abort or after the task's timeout (an
 * `AttemptTimedOut` reason), and cleans up after.
 */
export async function withTimeout<T>(
  task: Bounded,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (task.timeoutMs === undefined) {
    // Without a timeout the run's own signal is the attempt's: no controller and listener per
    // attempt. The run aborts it with an AttemptAborted reason.
    return work(task.abort);
  }
  const controller = new AbortController();
  const onAbort = () => controller.abort(new AttemptAborted("aborted by the run"));
  task.abort.addEventListener("abort", onAbort, { once: true });
  if (task.abort.aborted) onAbort();
  const timer = setTimeout(
    () => controller.abort(new AttemptTimedOut(`timed out after ${task.timeoutMs} ms`)),
    task.timeoutMs,
  );
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
    task.abort.removeEventListener("abort", onAbort);
  }
}

/**
 * What the model calls of an attempt (or a scoring) used: the usage of each `ctx.chat` call (a
 * replayed one's marked `reused`: paid for before, not now), and the requests re-sent after
 * retryable failures by any call told `ctx.onRetry`.
 */
export interface Spent {
  usage: Usage[];
  retries: number;
}

/**
 * The solver's and scorers' context; `spent` collects the usage of every `ctx.chat` call made
 * now, and every re-sent request (`ctx.onRetry`). With a `journal`, `ctx.step` and `ctx.chat` are
 * journaled: a replayed chat call's usage goes to `journal.reused` and to `spent` marked as
 * `reused` (the attempt's usage is its whole trajectory; the interrupted execution paid for that
 * call, so it is no spend now), and a replayed call sends nothing, so it re-sends nothing.
 */
export function context(
  task: Pick<KeyTask, "callModel" | "model" | "runId" | "key">,
  signal: AbortSignal,
  spent: Spent,
  journal?: StepJournal,
): SolverContext {
  const { callModel, model } = task;
  const onRetry = (): void => {
    spent.retries++;
  };
  const call = async (request: ModelCall): Promise<ModelReply> => {
    if (!callModel) throw new Error("ctx.chat is not available: this eval has no model caller");
    const sent = await callModel(
      request,
      model === undefined ? { signal, onRetry } : { signal, model, onRetry },
    );
    return withParts(sent);
  };
  return {
    runId: task.runId,
    epoch: task.key.epoch,
    signal,
    model,
    onRetry,
    async chat(request): Promise<ModelReply> {
      const send = async (): Promise<ModelReply> => {
        const reply = await call(request);
        if (reply.usage) spent.usage.push(reply.usage);
        return reply;
      };
      if (!journal || request.journal === false) return send();
      const { reply, replayed } = await journaledChat(journal, chatInput(request, model), send);
      // A replayed call is still this attempt's trajectory: its usage counts, marked reused
      // (the interrupted execution paid for it), so spend now leaves it out.
      if (replayed && reply.usage) spent.usage.push(reusedUsage(reply.usage));
      return reply;
    },
    async chatStep(input, send, options) {
      if (!journal) return { reply: withParts(await send()), replayed: false };
      return journaledChat(journal, input, send, options);
    },
    async step<T>(
      name: string,
      input: Json,
      fn: () => Promise<T> | T,
      options?: { journal?: boolean },
    ): Promise<T> {
      if (typeof name !== "string" || name === "") {
        throw new Error("ctx.step needs a name (a non-empty string)");
      }
      if (!journal || options?.journal === false) return fn();
      const done = await journal.step(
        "step",
        name,
        input,
        async () => ({ result: await fn() }),
        (thrown) => (signal.aborted ? null : stepError(thrown)),
      );
      return done.result as T;
    },
  };
}

function stepError(thrown: unknown): StepError {
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  const tagged = thrown as { type?: unknown; status?: unknown } | null;
  const error: StepError = { message };
  if (typeof tagged === "object" && tagged !== null) {
    if (typeof tagged.type === "string") error.type = tagged.type;
    if (typeof tagged.status === "number") error.status = tagged.status;
  }
  return error;
}

async function attempt(
  task: KeyTask,
  signal: AbortSignal,
  startedAt: Date,
  t0: number,
): Promise<AttemptDraft> {
  const spent: Spent = { usage: [], retries: 0 };
  const scrub = scrubber(task.redactor);
  const journal = task.journal && journalOf(task, task.journal);
  const ctx = context(task, signal, spent, journal);
  let output: Json = null;
  let usage: Usage | null = null;
  let transcript: Json = null;
  let reported = 0;
  const scores: Score[] = [];
  let error: AttemptError | null = null;
  try {
    const returned = await untilAborted(
      Promise.resolve().then(() => task.solver(task.record.sample, ctx)),
      signal,
    );
    const result = normalizeSolverReturn(returned);
    // Before the scorers see it: a judge must not be sent a key the endpoint echoed either.
    output = scrub.json(result.output);
    usage = result.usage ?? null;
    transcript = scrub.json(result.transcript ?? null);
    reported = result.retries ?? 0;
  } catch (thrown) {
    error = solverError(thrown, signal);
  }
  if (!error) {
    const scored = await scoreOutput(task.record.sample, output, task.scorers, ctx, signal);
    scores.push(...scored.scores);
    spent.usage.push(...scored.spent);
    error = scored.error;
  }
  // Entries of the interrupted execution that this one never reached are not its trajectory.
  await journal?.finish();
  const completedAt = new Date();
  if (error) error = { ...error, message: scrub.text(error.message) };
  const draft = draftOf(task, {
    output,
    scores: scrub.scores(scores),
    usage: spent.usage.reduce<Usage | null>(addUsage, usage),
    transcript,
    error,
    // Counted now, whatever became of the attempt: a call that failed after retrying re-sent too.
    retries: spent.retries + reported,
    startedAt,
    completedAt,
    durationMs: Math.round(performance.now() - t0),
  });
  if (scrub.found.size > 0) draft.redacted = [...scrub.found].sort();
  if (journal) task.journal?.onDone?.(journal);
  return draft;
}

function journalOf(task: KeyTask, options: NonNullable<KeyTask["journal"]>): StepJournal {
  const redactor = task.redactor;
  const active = redactor !== undefined && !redactor.empty;
  return new StepJournal({
    key: task.key,
    entries: options.entries,
    discardOpen: options.discardOpen ?? false,
    write: options.write,
    redact: (value) => (active ? redactor.json(value) : { value, found: [] }),
  });
}

/** What a pass of scorers over one output gave. */
export interface ScorerPass {
  /**
   * One per scorer that ran, in order: its value, or (it threw) an entry with its `error`. Each
   * score stands on its own: a scorer that threw does not stop the ones after it. Only the
   * attempt's timeout (or abort) ends the pass, and the scorers after it have no entry.
   */
  scores: Score[];
  /** A `scorer` error naming the first scorer that threw (and how many others did), or the timeout. */
  error: AttemptError | null;
  /** What the scorers paid for (a judge's usage), whatever their verdict. */
  spent: Usage[];
}

/**
 * Runs `scorers` over an output in order. A scorer that throws gets an error entry in place of
 * its score and the pass goes on; what it reported paying for (a `usage` on what it threw, see
 * ScorerError) is still spent. The attempt's timeout ends the pass as a timeout; an abort by the
 * run throws `AttemptAborted`.
 */
export async function scoreOutput(
  sample: SampleRecord["sample"],
  output: Json,
  scorers: readonly Scorer[],
  ctx: SolverContext,
  signal: AbortSignal,
): Promise<ScorerPass> {
  const pass: ScorerPass = { scores: [], error: null, spent: [] };
  const failed: Score[] = [];
  for (const scorer of scorers) {
    try {
      const value = await untilAborted(
        Promise.resolve().then(() => scorer.score({ sample, output, ctx })),
        signal,
      );
      // A scorer that paid for a model (a judge) reports it; paid for even if its value is bad.
      if (typeof value === "object" && value.usage) pass.spent.push(value.usage);
      pass.scores.push(normalizeScore(scorer.name, value));
    } catch (thrown) {
      const usage = thrownUsage(thrown);
      if (usage) pass.spent.push(usage);
      const typed = solverError(thrown, signal);
      // The attempt's own timeout: every scorer after this one would meet the same dead signal.
      if (signal.aborted) {
        pass.error = typed;
        break;
      }
      const score: Score = { scorer: scorer.name, value: null, error: typed.message };
      pass.scores.push(score);
      failed.push(score);
    }
  }
  pass.error ??= scorerError(failed);
  return pass;
}

/** The attempt's error when scorers threw: the first one's, naming the others. */
function scorerError(failed: readonly Score[]): AttemptError | null {
  const [first, ...others] = failed;
  if (first === undefined) return null;
  const more =
    others.length === 0
      ? ""
      : ` (and ${others.length} more scorer${others.length > 1 ? "s" : ""} failed: ${others.map((s) => s.scorer).join(", ")})`;
  return { type: "scorer", scorer: first.scorer, message: `${first.error ?? ""}${more}` };
}

/** The usage a scorer put on what it threw (a judge paid for before it failed), when valid. */
function thrownUsage(thrown: unknown): Usage | undefined {
  if (typeof thrown !== "object" || thrown === null || !("usage" in thrown)) return undefined;
  const parsed = usageSchema.safeParse(thrown.usage);
  return parsed.success ? parsed.data : undefined;
}

interface DraftParts {
  output: Json;
  scores: Score[];
  usage: Usage | null;
  transcript: Json;
  error: AttemptError | null;
  retries: number;
  startedAt: Date;
  completedAt: Date;
  durationMs: number;
}

function draftOf(task: KeyTask, parts: DraftParts): AttemptDraft {
  const { error } = parts;
  // Fields listed, not `...task.key`: spreading a 2-field object into a 14-field literal builds
  // out-of-object property stores, and at thousands of attempts a second that garbage was
  // promoted to the old generation (hundreds of MB of RSS on a 100,000-sample run).
  return {
    sampleId: task.key.sampleId,
    epoch: task.key.epoch,
    status: error ? "error" : "scored",
    output: parts.output,
    scores: parts.scores,
    // Model calls through ctx.chat were paid for, whatever became of the attempt.
    usage: parts.usage,
    transcript: parts.transcript,
    error,
    startedAt: parts.startedAt.toISOString(),
    completedAt: parts.completedAt.toISOString(),
    durationMs: parts.durationMs,
    fingerprint: task.record.fingerprint,
    provenance: { kind: "executed" },
    retries: parts.retries,
  };
}

/**
 * Replaces the run's known secrets in what an attempt holds and collects which ones it found.
 * Without secrets every step returns its input untouched.
 */
export function scrubber(redactor: Redactor | undefined) {
  const found = new Set<string>();
  const active = redactor !== undefined && !redactor.empty;
  const note = <T>(redaction: { value: T; found: string[] }): T => {
    for (const name of redaction.found) found.add(name);
    return redaction.value;
  };
  return {
    found,
    json: (value: Json): Json => (active ? note(redactor.json(value)) : value),
    text: (value: string): string => (active ? note(redactor.text(value)) : value),
    scores: (scores: Score[]): Score[] =>
      active ? (note(redactor.json(scores as unknown as Json)) as unknown as Score[]) : scores,
  };
}

/** Resolves or rejects with `work`, or rejects with the abort reason as soon as `signal` fires. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Types a thrown value. Solvers signal provider/timeout failures with an error carrying `type`,
 * and a provider error that no request would get past with `configuration` (a ConfigurationFault).
 */
export function solverError(thrown: unknown, signal: AbortSignal): AttemptError {
  if (signal.aborted && signal.reason instanceof AttemptAborted) throw signal.reason;
  if (signal.aborted && signal.reason instanceof AttemptTimedOut) {
    return { type: "timeout", message: signal.reason.message };
  }
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  const tagged = thrown as { type?: unknown; status?: unknown } | null;
  const type = typeof tagged === "object" && tagged !== null ? tagged.type : undefined;
  const error: AttemptError = {
    type: type === "provider" || type === "timeout" ? type : "solver",
    message,
  };
  if (typeof tagged?.status === "number") error.status = tagged.status;
  if (error.type === "provider") {
    const fault = configurationFaultSchema.safeParse(
      (tagged as { configuration?: unknown } | null)?.configuration,
    );
    if (fault.success) error.configuration = fault.data;
  }
  return error;
}

/**
 * Two parts of an attempt's usage added (see core/usage.ts): tiers and the reused part summed; the
 * sum has a cost only when every part that used tokens had one.
 */
export const addUsage = addUsages;
