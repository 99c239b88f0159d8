import { createHash } from "node:crypto";
import type { Json } from "../core/json.js";
import { canonicalJson } from "../core/json.js";
import { conversationOf, startsWith } from "../core/chat-conversation.js";
import { isStetError } from "../core/errors.js";
import type { TrajectoryEntry } from "../core/trajectory.js";
import { carriedUsage, figuresOf, reusedUsage } from "../core/usage.js";
import type { Key, Usage } from "../core/types.js";
import type { JournalEntry, StepDiscard, StepDraft, StepError } from "../store/types.js";

/**
 * How many of the last chat steps a new one's conversation is matched against: a simulated
 * user's calls alternate with the solver's, which may make several (tool calls) in between.
 */
const RECENT_CHATS = 8;

/** Entries over this many bytes (input and result, as JSON) are refused. */
export const DEFAULT_MAX_ENTRY_BYTES = 1_000_000;

/** What a key's execution tells the journal: where entries go and how they are redacted. */
export interface JournalOptions {
  key: Key;
  /** The open entries of the key's interrupted execution, in step order (empty: nothing to replay). */
  entries: readonly JournalEntry[];
  /** Open entries exist that are not replayed (a changed sample's): the first write drops them. */
  discardOpen?: boolean;
  /**
   * `entries` are an errored attempt's (bound to it), not open ones: before the first is
   * replayed they are all written again as this execution's open entries, so its attempt binds
   * its whole trajectory and a kill from then on resumes from them.
   */
  reopen?: boolean;
  /** Resolves once the entry (or the discard) is durable (AttemptWriter.writeStep). */
  write: (draft: StepDraft | StepDiscard) => Promise<void>;
  /** Replaces known secrets in what is written; returns the names found. */
  redact: (value: Json) => { value: Json; found: string[] };
  maxEntryBytes?: number;
}

/** What one step gave: the result (or the error to rethrow) and whether it was replayed. */
export interface StepOutcome {
  result: Json;
  replayed: boolean;
  /** A chat step's usage as recorded (the call's own figures); null for others. */
  usage: Usage | null;
  /**
   * A replayed chat step's usage as the attempt counts it: reused (the interrupted execution
   * paid for it, not now), or carried when an errored attempt of the key bought the call (its
   * usage counts it). Null when the step was not replayed or used nothing.
   */
  replayedUsage: Usage | null;
}

const NO_USAGE = { usage: null, replayedUsage: null } as const;

/** A step's failure that is the step's own (a tool that threw), recorded and replayed as such. */
export class StepFailed extends Error {
  override readonly name = "StepFailed";
  constructor(
    readonly stepError: StepError,
    readonly replayed: boolean,
  ) {
    super(stepError.message);
    // solverError() types a thrown value by these two fields.
    Object.assign(this, {
      ...(stepError.type === undefined ? {} : { type: stepError.type }),
      ...(stepError.status === undefined ? {} : { status: stepError.status }),
    });
  }
}

/**
 * A key execution's step journal: numbers each `ctx.step`/`ctx.chat` call, replays the
 * interrupted execution's entries while names and input hashes match, and writes every new
 * step through before its result is handed back. The first mismatch ends replay for the rest of
 * the execution; the write of that step discards the stale entries from there on.
 */
export class StepJournal {
  #next = 0;
  #replaying: boolean;
  #truncateAt: number | null = null;
  replayed = 0;
  diverged = 0;
  /** Replayed chat steps' usage: reused, in the attempt's usage as `reused`, never spent now. */
  readonly reused: Usage[] = [];
  /** This execution's entries in step order, replayed and new: its scorers' trajectory. */
  readonly trail: TrajectoryEntry[] = [];
  readonly #options: JournalOptions;
  #unwritable = false;
  /** The errored attempt's entries are still to be written as this execution's (`reopen`). */
  #toReopen: boolean;
  /** Writes of `behind` steps still committing, and the first failure among them. */
  #behind: Promise<void>[] = [];
  #behindFailure: { error: unknown } | null = null;
  /**
   * The last chat steps replayed or written (a few: a simulated user's calls alternate with the
   * solver's), whose conversations a new one may continue.
   */
  #chats: { step: number; conversation: readonly Json[] }[] = [];

  constructor(options: JournalOptions) {
    this.#options = options;
    this.#replaying = options.entries.length > 0;
    this.#toReopen = (options.reopen ?? false) && this.#replaying;
    if (options.discardOpen) this.#truncateAt = 0;
  }

  /**
   * Runs (or replays) step `name`. `run` returns the result and, for a chat step, its usage.
   * Throws what `run` threw (a StepFailed for a recorded failure); `record` says whether a
   * throw is the step's own and is to be journaled (an abort or a timeout never is).
   *
   * `last`: the result is the solver's output and nothing acts on it outside the attempt (the
   * last step of `solvers.chat`). Its entry is queued ahead of the attempt and commits no later
   * than it, but the step returns without waiting for the entry to be durable. A kill before
   * that commit loses the entry, as a kill before any write does; nothing that saw the result
   * outlives the process. A failed write fails the attempt's own write (the same writer).
   *
   * `behind`: until the next step of kind "step", only model calls (and the output) see the
   * result. The step returns while its entry commits; a model call may go out meanwhile (it acts
   * on nothing outside; its own entry is queued after this one, so it never commits first), and
   * the next "step" step, `finish` and every chat step's return wait for the commit. A kill before
   * it loses the entry and whatever call went out on it, as a kill during that call would.
   */
  async step(
    kind: StepDraft["kind"],
    name: string,
    input: Json,
    run: () => Promise<{ result: unknown; usage?: Usage | undefined }>,
    record: (thrown: unknown) => StepError | null,
    options: { last?: boolean; behind?: boolean } = {},
  ): Promise<StepOutcome> {
    const index = this.#next++;
    const inputText = jsonText(input, `the input of step "${name}"`);
    const inputHash = createHash("sha256").update(inputText).digest("hex");
    const replay = this.#match(index, name, inputHash);
    if (replay) {
      if (this.#toReopen) await this.#reopen();
      this.replayed++;
      this.trail.push(replay);
      if (replay.kind === "chat" && !replay.error) this.#continued(index, replay.input);
      if (replay.error) throw new StepFailed(replay.error, true);
      if (!replay.usage) return { result: replay.result, replayed: true, ...NO_USAGE };
      const usage = figuresOf(replay.usage);
      this.reused.push(usage);
      // A call an errored attempt of the key bought (an entry of it, or one marked so when it was
      // reopened) is in that attempt's usage: counted there, carried in this one's trajectory.
      const bought = this.#options.reopen === true || replay.usage.reused !== undefined;
      const replayedUsage = bought ? carriedUsage(usage) : reusedUsage(usage);
      return { result: replay.result, replayed: true, usage, replayedUsage };
    }
    // A step may act outside the process: what it acts on must be durable first.
    if (kind === "step") await this.#settleBehind();
    const started = performance.now();
    const recordedAt = new Date().toISOString();
    let result: Json = null;
    let usage: Usage | null = null;
    let error: StepError | null = null;
    try {
      const done = await run();
      result = checkResult(done.result, name);
      usage = done.usage ?? null;
    } catch (thrown) {
      error = record(thrown);
      if (!error) throw thrown;
    }
    const draft = this.#draft({ kind, name, index, input, inputHash, result, error, usage });
    draft.recordedAt = recordedAt;
    draft.durationMs = Math.round(performance.now() - started);
    this.#checkSize(draft, name, inputText.length);
    this.trail.push(draft);
    const written = kind === "chat" && !error ? this.#continuing(draft) : draft;
    if (options.last && !error) void this.#write(written).catch(() => {});
    else if (options.behind && !error) this.#writeBehind(written);
    else await this.#write(written);
    if (kind === "chat") await this.#settleBehind();
    if (error) throw new StepFailed(error, false);
    return { result, replayed: false, usage, replayedUsage: null };
  }

  /**
   * At the end of the execution: entries it never reached (the agent finished sooner, on another
   * path) are not its trajectory, and are dropped before its attempt commits and binds the rest.
   */
  async finish(): Promise<void> {
    await this.#settleBehind();
    const { entries, key } = this.#options;
    if (!this.#replaying || this.#next >= entries.length) return;
    this.#replaying = false;
    this.diverged++;
    // An errored attempt's entries never written as this execution's: there is nothing to drop.
    if (this.#toReopen) return;
    await this.#write({ sampleId: key.sampleId, epoch: key.epoch, fromStep: this.#next });
  }

  /**
   * Writes the errored attempt's entries as this execution's open entries (the writer commits
   * them together, in order): replay then goes on as a resume's does, a divergence or an early
   * end dropping the open entries from there on.
   */
  async #reopen(): Promise<void> {
    this.#toReopen = false;
    // Their usage is marked reused: a resume that replays them knows an attempt counts it.
    const copies = this.#options.entries.map(({ runId: _r, attempt: _a, ...draft }) => ({
      ...draft,
      usage: draft.usage && reusedUsage(draft.usage),
    }));
    await Promise.all(copies.map((draft) => this.#write(draft)));
  }

  /**
   * Writes through, unless the store stayed unwritable: then this execution goes on unjournaled
   * (its attempt goes to the fallback file like every other, and a resume that loses it runs its
   * steps again) rather than failing a step whose work is done. A fenced write still throws.
   */
  async #write(draft: StepDraft | StepDiscard): Promise<void> {
    if (this.#unwritable) return;
    try {
      await this.#options.write(draft);
    } catch (error) {
      if (!isStetError(error, "E_STORE_UNWRITABLE")) throw error;
      this.#unwritable = true;
    }
  }

  /**
   * A new chat step's draft as written: when its conversation continues one of the last
   * RECENT_CHATS chat steps' (the latest that it continues whole), it names that step as its
   * prefix and the store keeps only the messages it added.
   */
  #continuing(draft: StepDraft): StepDraft {
    const prefix = this.#continued(draft.step, draft.input);
    return prefix ? { ...draft, inputPrefix: prefix } : draft;
  }

  /**
   * Notes chat step `step`'s conversation as one a later step may continue; returns the prefix it
   * shares with the latest of the last chat steps whose whole conversation it continues (that
   * step and its message count), if any.
   */
  #continued(step: number, input: Json): { step: number; count: number } | undefined {
    const conversation = conversationOf(input);
    if (!conversation) return undefined;
    const earlier = this.#chats.findLast((c) => startsWith(conversation, c.conversation));
    this.#chats.push({ step, conversation });
    if (this.#chats.length > RECENT_CHATS) this.#chats.shift();
    return earlier && { step: earlier.step, count: earlier.conversation.length };
  }

  /** Starts a `behind` step's write; its failure is rethrown by the next `#settleBehind`. */
  #writeBehind(draft: StepDraft): void {
    const write = this.#write(draft).catch((error: unknown) => {
      this.#behindFailure ??= { error };
    });
    this.#behind.push(write);
  }

  /** Waits for the `behind` writes still committing; throws the first that failed. */
  async #settleBehind(): Promise<void> {
    if (this.#behind.length > 0) await Promise.all(this.#behind.splice(0));
    if (this.#behindFailure) throw this.#behindFailure.error;
  }

  #match(index: number, name: string, inputHash: string): JournalEntry | undefined {
    if (!this.#replaying) return undefined;
    const entry = this.#options.entries[index];
    if (entry && entry.name === name && entry.inputHash === inputHash) return entry;
    // Another path (or the journal ran out): nothing from here on is replayed.
    this.#replaying = false;
    if (entry) {
      this.diverged++;
      this.#truncateAt = index;
    }
    return undefined;
  }

  #draft(parts: {
    kind: StepDraft["kind"];
    name: string;
    index: number;
    input: Json;
    inputHash: string;
    result: Json;
    error: StepError | null;
    usage: Usage | null;
  }): StepDraft {
    const { key, redact } = this.#options;
    const found = new Set<string>();
    const scrub = (value: Json): Json => {
      const r = redact(value);
      for (const n of r.found) found.add(n);
      return r.value;
    };
    const draft: StepDraft = {
      sampleId: key.sampleId,
      epoch: key.epoch,
      step: parts.index,
      name: parts.name,
      kind: parts.kind,
      inputHash: parts.inputHash,
      input: scrub(parts.input),
      result: scrub(parts.result),
      error: parts.error && {
        ...parts.error,
        message: scrub(parts.error.message) as string,
      },
      usage: parts.usage,
      recordedAt: "",
      durationMs: 0,
    };
    if (found.size > 0) draft.redacted = [...found].sort();
    if (this.#truncateAt !== null && this.#truncateAt <= parts.index) {
      draft.truncate = true;
      this.#truncateAt = null;
    }
    return draft;
  }

  #checkSize(draft: StepDraft, name: string, inputBytes: number): void {
    const limit = this.#options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
    const bytes = inputBytes + JSON.stringify(draft.result).length;
    if (bytes <= limit) return;
    throw new Error(
      `step "${name}": its journal entry is ${bytes} bytes, over the ${limit}-byte limit; ` +
        `pass { journal: false } to this call to run it unjournaled`,
    );
  }
}

/** The step's result as JSON, or a `solver` error naming the step. */
function checkResult(value: unknown, name: string): Json {
  if (value === undefined) return null;
  const problem = notJson(value, new Set());
  if (problem) throw new Error(`the result of step "${name}" is not JSON: ${problem}`);
  return value as Json;
}

/** Canonical JSON text of a value that must be JSON (no functions, undefined, NaN, cycles…). */
function jsonText(value: unknown, what: string): string {
  const problem = notJson(value, new Set());
  if (problem) throw new Error(`${what} is not JSON: ${problem}`);
  return canonicalJson(value);
}

/**
 * What is not JSON in `value`, as "$.a[0] is NaN", or null. The path is built only for a problem
 * (each level adds its part on the way back): a value that is JSON costs no string per member.
 *
 * @example notJson({ a: [NaN] }, new Set()) // "$.a[0] is NaN"
 */
export function notJson(value: unknown, seen: Set<object>): string | null {
  const problem = findNotJson(value, seen);
  return problem && `$${problem.at.reverse().join("")} ${problem.says}`;
}

/** A problem found: where (innermost part first) and what. */
interface NotJson {
  at: string[];
  says: string;
}

function within(problem: NotJson, part: string): NotJson {
  problem.at.push(part);
  return problem;
}

function findNotJson(value: unknown, seen: Set<object>): NotJson | null {
  if (value === null || typeof value === "string" || typeof value === "boolean") return null;
  if (typeof value === "number")
    return Number.isFinite(value) ? null : { at: [], says: `is ${value}` };
  if (typeof value !== "object") return { at: [], says: `is a ${typeof value}` };
  if (seen.has(value)) return { at: [], says: "is a cycle" };
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = findNotJson(value[i], seen);
        if (problem) return within(problem, `[${i}]`);
      }
      return null;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      return { at: [], says: `is a ${(value as object).constructor?.name ?? "non-plain object"}` };
    }
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const member = (value as Record<string, unknown>)[key];
      if (member === undefined) continue;
      const problem = findNotJson(member, seen);
      if (problem) return within(problem, `.${key}`);
    }
    return null;
  } finally {
    seen.delete(value);
  }
}
