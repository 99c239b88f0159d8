import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, type Json } from "../core/json.js";
import type { JournalEntry, StepDiscard, StepDraft } from "../store/types.js";
import { StepJournal } from "./step-journal.js";

const key = { sampleId: "s1", epoch: 1 };
const user = (text: string): Json => ({ role: "user", content: text });
const assistant = (text: string): Json => ({ role: "assistant", content: text });

/** A journal whose writes are kept, replaying `entries`. */
function journal(entries: JournalEntry[] = []) {
  const written: StepDraft[] = [];
  const j = new StepJournal({
    key,
    entries,
    write: (d: StepDraft | StepDiscard) => {
      if (!("fromStep" in d)) written.push(d);
      return Promise.resolve();
    },
    redact: (value) => ({ value, found: [] }),
  });
  const chat = (messages: Json[]) =>
    j.step(
      "chat",
      "chat",
      { model: "m", messages },
      () => Promise.resolve({ result: { content: "ok" } }),
      () => null,
    );
  const tool = (i: number) =>
    j.step(
      "step",
      "tool:t",
      { i },
      () => Promise.resolve({ result: i }),
      () => null,
    );
  return { written, chat, tool };
}

const prefixes = (written: StepDraft[]) => written.map((d) => [d.step, d.inputPrefix ?? null]);

describe("StepJournal: a chat step continuing an earlier one's conversation", () => {
  it("names the latest chat step whose whole conversation it continues, past tool steps", async () => {
    const { written, chat, tool } = journal();
    const [u1, a1, u2] = [user("one"), assistant("1"), user("two")];
    await chat([u1]);
    await tool(0);
    await chat([u1, a1, u2]);
    await chat([user("another thread")]);
    await chat([u1, a1, u2, assistant("2")]);
    expect(prefixes(written)).toEqual([
      [0, null],
      [1, null],
      [2, { step: 0, count: 1 }],
      [3, null],
      [4, { step: 2, count: 3 }],
    ]);
    // The whole input is what is drafted and hashed; the prefix only says how it is stored.
    const last = written[4]!;
    expect(last.inputHash).toBe(
      createHash("sha256").update(canonicalJson(last.input)).digest("hex"),
    );
  });

  it("continues a simulated user's and the solver's conversations each from its own", async () => {
    const { written, chat } = journal();
    // The solver's view and the user's (roles swapped) alternate.
    await chat([user("hi")]);
    await chat([assistant("hi"), user("hello")]);
    await chat([user("hi"), assistant("hello"), user("more")]);
    await chat([assistant("hi"), user("hello"), assistant("more"), user("sure")]);
    expect(prefixes(written)).toEqual([
      [0, null],
      [1, null],
      [2, { step: 0, count: 1 }],
      [3, { step: 1, count: 2 }],
    ]);
  });

  it("continues a replayed chat step, matched by its JSON though rebuilt", async () => {
    const first = journal();
    await first.chat([user("one")]);
    const replayed = first.written.map((d) => ({
      ...d,
      runId: "r",
      attempt: null,
      input: JSON.parse(JSON.stringify(d.input)) as Json,
    }));
    const { written, chat } = journal(replayed);
    await chat([user("one")]); // replayed: nothing written
    await chat([user("one"), assistant("1"), user("two")]);
    expect(prefixes(written)).toEqual([[1, { step: 0, count: 1 }]]);
  });
});
