import { expect, it } from "vitest";
import type { Json } from "../../core/json.js";
import type { StepDraft } from "../types.js";
import { draft, errorDraft, type HarnessRef, newRun } from "./fixtures.js";

const k11 = { sampleId: "s1", epoch: 1 };
const k21 = { sampleId: "s2", epoch: 1 };

const user = { role: "user", content: "add 2 and 3" };
const call = { role: "assistant", content: null, tool_calls: [{ id: "c1", name: "add" }] };
const tool = { role: "tool", tool_call_id: "c1", content: "5" };
const answer = { role: "assistant", content: "5" };
const more = { role: "user", content: "and times 4?" };

/** A chat step of `key` at `index` sending `messages`, continuing `prefix` when given. */
function chat(
  key: typeof k11,
  index: number,
  messages: Json[],
  prefix?: StepDraft["inputPrefix"],
): StepDraft {
  return {
    ...key,
    step: index,
    name: "chat",
    kind: "chat",
    inputHash: String(index % 10).repeat(64),
    input: { model: "m", messages, temperature: 0 },
    result: { content: `reply ${index}` },
    error: null,
    usage: { inputTokens: 10 * (index + 1), outputTokens: 2 },
    recordedAt: "2025-01-02T00:00:00.000Z",
    durationMs: 5,
    ...(prefix && { inputPrefix: prefix }),
  };
}

/** A tool step between chat steps: it has no conversation and breaks no prefix. */
function toolStep(key: typeof k11, index: number): StepDraft {
  return { ...chat(key, index, []), name: "tool:add", kind: "step", input: { a: 2, b: 3 } };
}

/** As the journal lists an entry: what was drafted, whole, without the prefix it was stored by. */
function listed(d: StepDraft, attempt: number | null): unknown {
  const { inputPrefix: _prefix, ...rest } = d;
  return { runId: expect.any(String), attempt, ...rest };
}

/**
 * A chat step stored as the messages it added to the key's previous chat step's conversation
 * (`StepDraft.inputPrefix`): every read gives the whole input back, open or bound to an attempt.
 */
export function describeJournalPrefixContract(h: HarnessRef): void {
  it("gives a chat step stored by its prefix back whole, open and once its attempt binds it", async () => {
    const { run, owner: me } = await newRun(h.store);
    const first = chat(k11, 0, [user]);
    const second = chat(k11, 2, [user, call, tool], { step: 0, count: 1 });
    const third = chat(k11, 3, [user, call, tool, answer, more], { step: 2, count: 3 });
    // Another key's entries between them in the same batches: a prefix is the key's own.
    const other = chat(k21, 0, [{ role: "user", content: "other" }]);
    await h.store.journal.record(run.id, me.token, [first, other, toolStep(k11, 1)]);
    await h.store.journal.record(run.id, me.token, [second, third]);

    const open = await h.store.journal.list(run.id, { ...k11, attempt: "open" });
    expect(open).toEqual([
      listed(first, null),
      listed(toolStep(k11, 1), null),
      listed(second, null),
      listed(third, null),
    ]);
    await h.store.attempts.record(run.id, me.token, [draft(k11)]);
    const bound = await h.store.journal.list(run.id, { ...k11, attempt: 1 });
    expect(bound.map((e) => e.input)).toEqual(open.map((e) => e.input));
    // A page of sample ids, as exports read them.
    const page = await h.store.journal.list(run.id, { fromSampleId: "s1", toSampleId: "s2" });
    expect(page.map((e) => [e.sampleId, e.step, e.input])).toEqual([
      ...open.map((e) => [e.sampleId, e.step, e.input]),
      ["s2", 0, other.input],
    ]);
  });

  it("keeps each attempt's prefixes within its own entries", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(run.id, me.token, [
      chat(k11, 0, [user]),
      chat(k11, 1, [user, answer], { step: 0, count: 1 }),
    ]);
    await h.store.attempts.record(run.id, me.token, [errorDraft(k11)]);
    // The retry's conversation differs from its first step: its own step 0 is what step 1 extends.
    await h.store.journal.record(run.id, me.token, [
      chat(k11, 0, [more]),
      chat(k11, 1, [more, answer], { step: 0, count: 1 }),
    ]);
    const all = await h.store.journal.list(run.id, k11);
    expect(all.map((e) => [e.attempt, e.step, e.input])).toEqual([
      [1, 0, chat(k11, 0, [user]).input],
      [1, 1, chat(k11, 1, [user, answer]).input],
      [null, 0, chat(k11, 0, [more]).input],
      [null, 1, chat(k11, 1, [more, answer]).input],
    ]);
  });

  it("says a journal is corrupt when a prefix's step is not stored, instead of a short conversation", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(run.id, me.token, [
      chat(k11, 2, [user, call, tool], { step: 1, count: 2 }),
    ]);
    await expect(h.store.journal.list(run.id, k11)).rejects.toMatchObject({
      code: "E_STORE",
      message: expect.stringMatching(/corrupt journal step 2 of .*s1#1: .*step 1's conversation/),
    });
  });

  it("refuses a prefix that is not an earlier chat step's part of the conversation, writing nothing", async () => {
    const { run, owner: me } = await newRun(h.store);
    const bad: [StepDraft, RegExp][] = [
      [chat(k11, 1, [user, call], { step: 1, count: 1 }), /names step 1, not an earlier one/],
      [chat(k11, 1, [user, call], { step: 0, count: 3 }), /prefix of 3 messages is not within/],
      [chat(k11, 1, [user, call], { step: 0, count: 0 }), /prefix of 0 messages is not within/],
      [
        { ...toolStep(k11, 1), inputPrefix: { step: 0, count: 1 } },
        /needs a chat step's conversation/,
      ],
    ];
    for (const [draft, message] of bad) {
      await expect(
        h.store.journal.record(run.id, me.token, [chat(k11, 0, [user]), draft]),
      ).rejects.toMatchObject({ code: "E_INVALID_INPUT", message: expect.stringMatching(message) });
    }
    expect(await h.store.journal.list(run.id)).toEqual([]);
  });
}
