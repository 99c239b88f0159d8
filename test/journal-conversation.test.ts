import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversationOf } from "../src/core/chat-conversation.js";
import { canonicalJson } from "../src/core/json.js";
import { defineEval } from "../src/eval/define-eval.js";
import { resolveEval } from "../src/eval/resolve-eval.js";
import { resumeRun } from "../src/runs/resume-run.js";
import { runEval } from "../src/runs/start-run.js";
import { scorers } from "../src/scorers/index.js";
import { solvers } from "../src/solvers/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { JournalEntry } from "../src/store/types.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// An agent's conversation grows by a reply and a tool result a turn, and each model call sends
// all of it: the step journal stores each chat step as the messages it added to the one before
// (`StepDraft.inputPrefix`), so a sample's journal grows with its conversation, not its square,
// and every read still gives each call's whole input.

const TURNS = 12;
const SAMPLES = 4;
/** A tool result of ~400 bytes: the conversation the model is sent grows by it every turn. */
const FILL = "lorem ipsum ".repeat(33);

let mock: MockOpenAI;
/** Samples whose 7th model call fails (500 until its retries are spent) while this is set. */
let failing = false;
const dir = mkdtempSync(join(tmpdir(), "stet-journal-conversation-"));

beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: ({ messages, n }) => {
      const done = messages.filter((m) => m.role === "tool").length;
      if (failing && done === 6) return { status: 500 };
      if (done === TURNS) return { reply: `done after ${n} calls` };
      return { toolCalls: [{ id: `call-${done}`, name: "step", arguments: { i: done } }] };
    },
  });
});
afterAll(async () => {
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
});

async function growingEval() {
  const ev = defineEval({
    name: "growing-conversation",
    dataset: Array.from({ length: SAMPLES }, (_, i) => ({ id: `s${i}`, input: `task ${i}` })),
    solver: solvers.agent({
      model: "gpt-4o-mini",
      baseURL: mock.url,
      apiKey: "sk-journal-test",
      system: "Take every step.",
      maxRetries: 0,
      tools: {
        step: {
          description: "one step of the task",
          parameters: { type: "object", properties: { i: { type: "number" } }, required: ["i"] },
          execute: ({ i }: { i: number }) => `${i}: ${FILL}`,
        },
      },
    }),
    scorers: [scorers.custom("finished", ({ output }) => /^done/.test(String(output)))],
    concurrency: 2,
    retries: 0,
  });
  return resolveEval(ev, { baseDir: dir });
}

interface Row {
  sample_id: string;
  attempt: number | null;
  step: number;
  input: string;
  prefix_step: number | null;
  prefix_count: number | null;
}

const chatRows = (path: string): Row[] => {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare(
        `SELECT sample_id, attempt, step, input, prefix_step, prefix_count FROM journal
          WHERE kind = 'chat' ORDER BY sample_id, attempt IS NULL, attempt, step`,
      )
      .all() as Row[];
  } finally {
    db.close();
  }
};

/** Each chat entry's input, as read, is the call's whole input: its hash is the one replay matches. */
function expectWhole(entries: readonly JournalEntry[]): void {
  const chats = entries.filter((e) => e.kind === "chat");
  expect(chats.length).toBeGreaterThan(0);
  for (const e of chats) {
    const hash = createHash("sha256").update(canonicalJson(e.input)).digest("hex");
    expect(hash, `${e.sampleId} step ${e.step}`).toBe(e.inputHash);
  }
}

describe("an agent's chat steps in the journal", () => {
  it("are stored as the messages each call added, and read back whole", async () => {
    const path = join(dir, "whole.db");
    const store = openSqliteStore(path);
    try {
      const report = await runEval({ store, eval: await growingEval() });
      expect(report.counts).toMatchObject({ scored: SAMPLES, errored: 0 });
      const rows = chatRows(path);
      expect(rows).toHaveLength(SAMPLES * (TURNS + 1));
      let stored = 0;
      let whole = 0;
      for (let s = 0; s < SAMPLES; s++) {
        const id = `s${s}`;
        const own = rows.filter((r) => r.sample_id === id);
        const entries = await store.journal.list(report.runId, { sampleId: id });
        const chats = entries.filter((e) => e.kind === "chat");
        expectWhole(entries);
        own.forEach((row, turn) => {
          const messages = conversationOf(JSON.parse(row.input) as never)!;
          const full = conversationOf(chats[turn]!.input)!;
          stored += row.input.length;
          whole += JSON.stringify(chats[turn]!.input).length;
          if (turn === 0) {
            expect([row.prefix_step, row.prefix_count]).toEqual([null, null]);
            expect(messages).toEqual(full);
            return;
          }
          // The previous chat step (a tool step between them), with all its messages: this call
          // added the model's tool call and the tool's result.
          const before = conversationOf(chats[turn - 1]!.input)!;
          expect([row.prefix_step, row.prefix_count]).toEqual([own[turn - 1]!.step, before.length]);
          expect(messages).toHaveLength(2);
          expect(full).toEqual([...before, ...messages]);
        });
      }
      // Linear, not quadratic: the whole inputs of 13 calls repeat the conversation ~6.5 times.
      expect(stored * 4).toBeLessThan(whole);
    } finally {
      await store.close();
    }
  });

  it("a retried sample replays them and goes on from its failed call", async () => {
    const path = join(dir, "retried.db");
    const store = openSqliteStore(path);
    try {
      failing = true;
      const first = await runEval({ store, eval: await growingEval() });
      expect(first.counts).toMatchObject({ scored: 0, errored: SAMPLES });
      failing = false;
      mock.reset();
      const report = await resumeRun({ store, runId: first.runId, eval: await growingEval() });
      expect(report.counts).toMatchObject({ scored: SAMPLES, errored: 0 });
      // Calls 1-6 of each sample replayed from its errored attempt's journal: the 7th on are new.
      expect(Object.values(mock.counts())).toEqual(Array(SAMPLES).fill(TURNS + 1 - 6));
      for (let s = 0; s < SAMPLES; s++) {
        const entries = await store.journal.list(report.runId, { sampleId: `s${s}` });
        expectWhole(entries);
        const second = entries.filter((e) => e.attempt === 2 && e.kind === "chat");
        expect(second).toHaveLength(TURNS + 1);
        const last = conversationOf(second.at(-1)!.input)!;
        expect(last).toHaveLength(2 + 2 * TURNS);
      }
      const prefixed = chatRows(path).filter((r) => r.attempt === 2 && r.prefix_step !== null);
      // The replayed copies are written whole; the calls made after them continue them.
      expect(prefixed.length).toBe(SAMPLES * (TURNS + 1 - 6));
    } finally {
      await store.close();
    }
  });
});
