// The agent group: solvers.agent against a local model server that calls a tool `turns` times
// per sample: what the journal adds to an agent whose tools take 20 ms, and what the loop itself
// costs per turn against a bare client making the same HTTP calls.
import { spawn } from "node:child_process";
import http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import Database from "better-sqlite3";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { defineEval, openSqliteStore, resolveEval, runEval, scorers, solvers } from "../stet.mjs";
import { median, report, reps, spread } from "../harness.mjs";

const TOOL = {
  name: "step",
  description: "one step of the task",
  parameters: { type: "object", properties: { i: { type: "number" } }, required: ["i"] },
};

/**
 * An OpenAI-format server answering at once, in a process of its own (as a remote model is: its
 * work does not share the measured process's thread): a tool call `step({ i })` while the
 * conversation holds fewer than TURNS tool results, then the answer. So a sample makes
 * `turns + 1` model calls and `turns` tool calls. Source text, run with `node -e`.
 */
const MODEL_SERVER = `
import http from "node:http";
const turns = Number(process.env.TURNS);
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    const { messages } = JSON.parse(body);
    const done = messages.filter((m) => m.role === "tool").length;
    const call = { id: "call_" + done, type: "function", function: { name: "step", arguments: JSON.stringify({ i: done }) } };
    const message = done < turns
      ? { role: "assistant", content: null, tool_calls: [call] }
      : { role: "assistant", content: "done after " + done };
    const answer = JSON.stringify({
      choices: [{ index: 0, message, finish_reason: done < turns ? "tool_calls" : "stop" }],
      usage: { prompt_tokens: 12, completion_tokens: 4 },
    });
    res.writeHead(200, { "content-type": "application/json" }).end(answer);
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

/** Starts MODEL_SERVER for `turns`; resolves with its base URL and a close() that ends it. */
function agentModel(turns) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", MODEL_SERVER], {
    env: { ...process.env, TURNS: String(turns) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`model server exited ${code}`)));
    child.stdout.once("data", (d) =>
      resolve({
        url: `http://127.0.0.1:${Number(String(d))}/v1`,
        close: () => child.kill(),
      }),
    );
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `n` samples of solvers.agent with the one tool, whose execution takes `stepMs` and returns
 * `resultBytes` of text (else its step number).
 */
function agentEval({ n, stepMs, concurrency, journal, url, resultBytes = 0 }) {
  const dataset = Array.from({ length: n }, (_, i) => ({ id: `s${i}`, input: `task ${i}` }));
  const ev = defineEval({
    name: "bench-agent-loop",
    dataset,
    solver: solvers.agent({
      model: "gpt-4o-mini",
      baseURL: url,
      apiKey: "sk-bench",
      tools: {
        [TOOL.name]: {
          description: TOOL.description,
          parameters: TOOL.parameters,
          execute: async ({ i }) => {
            if (stepMs > 0) await sleep(stepMs);
            return resultBytes > 0 ? `${i} ${"x".repeat(resultBytes)}` : i;
          },
        },
      },
    }),
    scorers: [scorers.custom("done", () => 1)],
    concurrency,
    journal,
  });
  return resolveEval(ev, { baseDir: process.cwd() });
}

/** The wall time (ms) of one run of `ev` on a fresh SQLite store. */
async function timeRun(ev) {
  const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
  const store = openSqliteStore(join(dir, "stet.db"));
  try {
    const t0 = performance.now();
    await runEval({ store, eval: ev });
    return performance.now() - t0;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The floor under the loop: `n` samples, one after another, each the same conversation over
 * node:http with a keep-alive agent (the same bodies: messages growing by the reply and the tool
 * result, the tool offered), and nothing else: no store, no journal, no scoring. Its wall (ms).
 */
async function bareLoop(n, url) {
  const agent = new http.Agent({ keepAlive: true });
  const target = new URL(`${url}/chat/completions`);
  const tools = [{ type: "function", function: TOOL }];
  const post = (messages) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({ model: "gpt-4o-mini", messages, tools });
      const headers = { "content-type": "application/json", authorization: "Bearer sk-bench" };
      const req = http.request(target, { method: "POST", agent, headers }, (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve(JSON.parse(text)));
      });
      req.on("error", reject);
      req.end(body);
    });
  const t0 = performance.now();
  for (let s = 0; s < n; s++) {
    const messages = [{ role: "user", content: `task ${s}` }];
    for (;;) {
      const { message } = (await post(messages)).choices[0];
      messages.push(message);
      if (!message.tool_calls) break;
      for (const call of message.tool_calls) {
        const { i } = JSON.parse(call.function.arguments);
        messages.push({ role: "tool", tool_call_id: call.id, content: String(i) });
      }
    }
  }
  const wall = performance.now() - t0;
  agent.destroy();
  return wall;
}

/** Runs `fn` in a model server for `turns`, closed afterwards. */
async function withModel(turns, fn) {
  const model = await agentModel(turns);
  try {
    await fn(model.url);
  } finally {
    model.close();
  }
}

/**
 * What the journal stores for an agent whose conversation grows: the bytes of its entries'
 * inputs (each call's input is the whole conversation so far) over the bytes of the attempts'
 * transcripts (each sample's final conversation), one run on a fresh SQLite store.
 */
async function journalGrowth(ev) {
  const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
  const path = join(dir, "stet.db");
  const store = openSqliteStore(path);
  try {
    await runEval({ store, eval: ev });
  } finally {
    await store.close();
  }
  const db = new Database(path, { readonly: true });
  try {
    const { input } = db.prepare("SELECT SUM(length(input)) AS input FROM journal").get();
    const { transcripts } = db
      .prepare("SELECT SUM(length(transcript)) AS transcripts FROM attempts")
      .get();
    return { input, transcripts };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pct = (x) => `${(x * 100).toFixed(1)} %`;
const ms = (x) => `${x.toFixed(2)} ms`;

/**
 * The journal's added wall with 20 ms tools; the loop's overhead per turn with 0 ms ones. The
 * variants alternate within each repetition, so a change of the machine's load meets them all.
 */
export default async function agentGroup() {
  const [n, turns, concurrency] = [96, 8, 16];
  await withModel(turns, async (url) => {
    const on = await agentEval({ n, stepMs: 20, concurrency, journal: true, url });
    const off = await agentEval({ n, stepMs: 20, concurrency, journal: false, url });
    const [ons, offs] = [[], []];
    for (let i = 0; i < reps; i++) {
      ons.push(await timeRun(on));
      offs.push(await timeRun(off));
    }
    const added = ons.map((w, i) => w / offs[i] - 1);
    report(
      `solvers.agent, ${n} samples × ${turns} tool calls of 20 ms (0 ms model in its own process), concurrency ${concurrency}, SQLite: wall added by the journal`,
      `${spread(added, pct)} (${spread(ons)} against ${spread(offs)}; load average ${loadavg()[0].toFixed(1)})`,
      "≤ 5 % (quiet machine)",
      median(added) <= 0.05,
    );
  });

  // A conversation that grows by 1.5 KB a turn for 30 turns: stored once, not once a turn.
  const [gn, gturns] = [20, 30];
  await withModel(gturns, async (url) => {
    const ev = await agentEval({
      n: gn,
      stepMs: 0,
      concurrency: 8,
      journal: true,
      url,
      resultBytes: 1500,
    });
    const { input, transcripts } = await journalGrowth(ev);
    const mbs = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`;
    report(
      `solvers.agent, ${gn} samples × ${gturns} turns whose tool results are 1.5 KB: the journal's stored inputs ÷ the transcripts (the final conversations)`,
      `${(input / transcripts).toFixed(2)} × (${mbs(input)} for ${mbs(transcripts)})`,
      "≤ 2 × (linear in the conversation)",
      input <= 2 * transcripts,
    );
  });

  // One sample after another: what a turn costs is not hidden behind other slots' waits.
  const [ln, lturns] = [40, 9];
  const calls = ln * (lturns + 1);
  await withModel(lturns, async (url) => {
    const on = await agentEval({ n: ln, stepMs: 0, concurrency: 1, journal: true, url });
    const off = await agentEval({ n: ln, stepMs: 0, concurrency: 1, journal: false, url });
    const [bares, ons, offs] = [[], [], []];
    for (let i = 0; i < reps; i++) {
      bares.push(await bareLoop(ln, url));
      ons.push(await timeRun(on));
      offs.push(await timeRun(off));
    }
    const perTurn = (ws) => ws.map((w, i) => (w - bares[i]) / calls);
    report(
      `the agent loop's own overhead per turn (a model call and its tool step), ${ln} samples × ${lturns + 1} model calls, 0 ms model and tools, concurrency 1, over a bare client loop making the same calls (${spread(bares)}): journaled`,
      `${spread(perTurn(ons), ms)} per turn; unjournaled ${spread(perTurn(offs), ms)}`,
      "—",
      true,
    );
  });
}
