import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI, type MockRequest } from "./helpers/mock-openai.js";
import { until } from "./helpers/wait.js";

const MAX_TURNS = 6;

/**
 * A shop's assistant (solvers.chat) against a simulated customer, both on the local server, as
 * `prefix` names their models (`anthropic:` for the Messages API's format).
 */
const conversationEval = (prefix: string) => `
import { defineEval, simulatedUser, solvers } from "stet";
export default defineEval({
  name: "conversation",
  dataset: "./data.jsonl",
  solver: solvers.conversation({
    assistant: solvers.chat({ model: "${prefix}shop-model", baseURL: process.env.MOCK_URL, system: "You are the shop." }),
    user: simulatedUser({
      model: "${prefix}customer-model",
      baseURL: process.env.MOCK_URL,
      persona: "A customer whose parcel is late.",
      maxTurns: ${MAX_TURNS},
    }),
  }),
  scorers: [function lastTurn({ output }) { return output === "answer ${MAX_TURNS}"; }],
});
`;

/** solvers.chat on the dataset as it is: a list of messages, or scripted turns. */
const CHAT_EVAL = `
import { defineEval, solvers } from "stet";
export default defineEval({
  name: "chat",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "echo-model", baseURL: process.env.MOCK_URL }),
  scorers: [function any() { return 1; }],
});
`;

/**
 * The turn a request belongs to, by the conversation's length: turn t is the customer's t-th
 * message and the shop's t-th answer. The shop is sent the 2t - 1 messages said so far; the
 * customer (turn t ≥ 2, writing its t-th message) the 2(t - 1) before it (in either format;
 * the Messages API's opening turn before them is not one).
 */
function turnOf(request: MockRequest): { side: "shop" | "customer"; turn: number } {
  const said = request.messages.filter((m) => /^(question|answer) \d+$/.test(m.content)).length;
  if (request.body.model === "shop-model") return { side: "shop", turn: (said + 1) / 2 };
  return { side: "customer", turn: said / 2 + 1 };
}

/** Requests of each turn (both sides), as "turn:count". */
const perTurn = (requests: readonly MockRequest[]) => {
  const counts = new Map<number, number>();
  for (const r of requests) counts.set(turnOf(r).turn, (counts.get(turnOf(r).turn) ?? 0) + 1);
  return Object.fromEntries(counts);
};

/** Requests of this turn (its customer's call first) hang: they are in flight at the kill. */
let holdTurn: number | null = null;
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: (request) => {
      if (request.body.model !== "shop-model" && request.body.model !== "customer-model") {
        return undefined; // chat evals: the last user message echoed
      }
      const { side, turn } = turnOf(request);
      if (holdTurn !== null && turn >= holdTurn) return { hang: true };
      return { reply: side === "shop" ? `answer ${turn}` : `question ${turn}` };
    },
  });
});
afterAll(() => mock.close());

const { project } = perTest();
const stored = (db: string) =>
  rawAttempts(db).map((a) => ({
    sample: a.sample_id,
    status: a.status,
    output: JSON.parse(String(a.output)) as unknown,
    transcript: JSON.parse(String(a.transcript)) as unknown,
  }));
const data = (...rows: object[]) => rows.map((row) => JSON.stringify(row)).join("\n");

// The OpenAI format, and the Anthropic Messages API's (which refuses a first turn that is not
// the user's: the customer's model is sent its own opening message first).
describe.each([
  { format: "openai", prefix: "" },
  { format: "anthropic", prefix: "anthropic:" },
] as const)(
  "a simulated-user conversation through the real CLI, $format format",
  ({ format, prefix }) => {
    it("a 6-turn simulated-user conversation SIGKILLed in turn 4 resumes at turn 4: 0 requests for turns 1–3, output and transcript as uninterrupted", async () => {
      const CONVERSATION_EVAL = conversationEval(prefix);
      const rows = data({ id: "late-parcel", input: "question 1" });
      mock.reset();
      const clean = project({ "eval.mjs": CONVERSATION_EVAL, "data.jsonl": rows });
      const env = { MOCK_URL: format === "openai" ? mock.url : mock.anthropicURL };
      const done = await runCli(["run", "eval.mjs"], { cwd: clean.dir, env });
      expect(done.code, done.stderr + done.stdout).toBe(0);
      expect(mock.requests.every((r) => r.format === format)).toBe(true);
      // Six answers and the five customer messages between them.
      expect(perTurn(mock.requests)).toEqual({ 1: 1, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2 });
      const customer = mock.requests.find((r) => turnOf(r).side === "customer")!;
      expect(customer.messages).toEqual([
        { role: "system", content: "A customer whose parcel is late." },
        ...(format === "anthropic"
          ? [{ role: "user", content: "(The conversation begins.)" }]
          : []),
        { role: "assistant", content: "question 1" },
        { role: "user", content: "answer 1" },
      ]);
      const expected = stored(clean.db);
      expect(expected).toMatchObject([{ status: "scored", output: `answer ${MAX_TURNS}` }]);
      expect(expected[0]!.transcript).toEqual([
        { role: "system", content: "You are the shop." },
        ...Array.from({ length: MAX_TURNS }, (_, i) => [
          { role: "user", content: `question ${i + 1}` },
          { role: "assistant", content: `answer ${i + 1}` },
        ]).flat(),
      ]);
      // Both sides' calls are the attempt's usage: 11 requests of 10 + 5 tokens.
      const tokens = (db: string) => rawAttempts(db).map((a) => [a.input_tokens, a.output_tokens]);
      expect(tokens(clean.db)).toEqual([[110, 55]]);

      mock.reset();
      const p = project({ "eval.mjs": CONVERSATION_EVAL, "data.jsonl": rows });
      holdTurn = 4;
      const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env });
      const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
      await until(() => mock.requests.some((r) => turnOf(r).turn === 4), "turn 4 begun", 60_000);
      cli.child.kill("SIGKILL");
      expect((await cli.done).signal).toBe("SIGKILL");
      expect(perTurn(mock.requests)).toEqual({ 1: 1, 2: 2, 3: 2, 4: 1 });

      holdTurn = null;
      mock.reset();
      const resumed = await runCli(["resume", runId], { cwd: p.dir, env });
      expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
      expect(perTurn(mock.requests)).toEqual({ 4: 2, 5: 2, 6: 2 });
      expect(stored(p.db)).toEqual(expected);
      // The replayed calls stay the attempt's trajectory (paid for by the killed execution).
      expect(tokens(p.db)).toEqual([[110, 55]]);

      // A changed persona is a changed solver: the run refuses it, naming the field.
      const changed = CONVERSATION_EVAL.replace("is late.", "never came.");
      writeFileSync(join(p.dir, "eval.mjs"), changed);
      const refused = await runCli(["resume", runId], { cwd: p.dir, env });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        'solver.user.persona: "A customer whose parcel is late." → "A customer whose parcel never came."',
      );
    }, 120_000);
  },
);

describe("conversations through the real CLI", () => {
  it("a multi-turn input (a list of messages) through solvers.chat: the request carries every message in order", async () => {
    const messages = [
      { role: "system", content: "Answer briefly." },
      { role: "user", content: "My parcel is late." },
      { role: "assistant", content: "Which order?" },
      { role: "user", content: "Order 42." },
    ];
    mock.reset();
    const p = project({ "eval.mjs": CHAT_EVAL, "data.jsonl": data({ id: "m", input: messages }) });
    const result = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { MOCK_URL: mock.url } });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(mock.requests.map((r) => r.body.messages)).toEqual([messages]);
    expect(stored(p.db)).toMatchObject([
      {
        output: "Order 42.",
        transcript: [...messages, { role: "assistant", content: "Order 42." }],
      },
    ]);
  });

  it("scripted user turns: one request per turn, each with the conversation so far", async () => {
    const turns = ["My parcel is late.", "Order 42.", "Thanks."];
    mock.reset();
    const p = project({ "eval.mjs": CHAT_EVAL, "data.jsonl": data({ id: "t", input: { turns } }) });
    const result = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { MOCK_URL: mock.url } });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    // The mock echoes the last user message.
    const conversation = turns.flatMap((turn) => [
      { role: "user", content: turn },
      { role: "assistant", content: turn },
    ]);
    expect(mock.requests.map((r) => r.body.messages)).toEqual([
      conversation.slice(0, 1),
      conversation.slice(0, 3),
      conversation.slice(0, 5),
    ]);
    expect(stored(p.db)).toMatchObject([{ output: "Thanks.", transcript: conversation }]);
  });

  it.each([
    [
      "a message with an unknown role",
      data(
        { id: "fine", input: "hello" },
        {
          id: "bad-role",
          input: [
            { role: "user", content: "hi" },
            { role: "bot", content: "hello" },
          ],
        },
      ),
      'sample "bad-role": input[1].role: "bot" is not a message role (system, user, assistant, tool or developer)',
    ],
    [
      "a turn that is not a string",
      data({ id: "bad-turn", input: { turns: ["hi", 42] } }),
      'sample "bad-turn": input.turns[1]: a turn is a string (the user\'s message), got 42',
    ],
  ])(
    "bad input (%s) is refused at load naming the sample and field: exit 1, no stack trace, nothing run",
    async (_, rows, message) => {
      mock.reset();
      const p = project({ "eval.mjs": CHAT_EVAL, "data.jsonl": rows });
      const result = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { MOCK_URL: mock.url } });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(mock.requests).toHaveLength(0);
      expect(existsSync(p.db) ? rawAttempts(p.db) : []).toEqual([]);
    },
  );
});
