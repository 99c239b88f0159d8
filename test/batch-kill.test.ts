import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockBatch, type BatchPoint, type MockBatchServer } from "./helpers/mock-batch.js";
import { batchEval } from "./helpers/batch-eval.js";

// SIGKILL at each point of a batch's life, then `stet resume`: every key is scored, the key set
// was submitted in exactly one batch, and no request was billed twice.

const N = 20;
const { project } = perTest();
const mocks: MockBatchServer[] = [];
afterEach(async () => {
  while (mocks.length) await mocks.pop()!.close();
});

type Protocol = "openai" | "anthropic";

function envOf(mock: MockBatchServer): Record<string, string> {
  return {
    OPENAI_BASE_URL: mock.url,
    OPENAI_API_KEY: "sk-batch-kill-0123456789",
    ANTHROPIC_BASE_URL: mock.anthropicURL,
    ANTHROPIC_API_KEY: "sk-ant-batch-kill-0123456789",
  };
}

function scoredKeys(db: string, runId: string): number {
  const raw = new Database(db, { readonly: true });
  try {
    const row = raw
      .prepare(
        "SELECT COUNT(DISTINCT sample_id) AS n FROM attempts_now WHERE run_id = ? AND status = 'scored'",
      )
      .get(runId) as { n: number };
    return row.n;
  } finally {
    raw.close();
  }
}

/**
 * Runs a batched eval, kills it with SIGKILL when the server reaches `point` (its answer held
 * until then) or after `commits` attempts were committed, then resumes it.
 */
async function killThenResume(
  protocol: Protocol,
  kill: { point?: BatchPoint; batchEnded?: boolean },
  n = N,
) {
  let reached: () => void = () => {};
  const atPoint = new Promise<void>((resolve) => (reached = resolve));
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  const mock = await startMockBatch({
    delayMs: 200,
    // A first poll later than the batch's 200 ms (a loaded machine) would otherwise find it
    // ended: the run then never reached "poll", and the test waited for it until its timeout.
    ...(kill.point === "poll" ? { minRunningPolls: 1 } : {}),
    hold: async (point) => {
      if (held || point !== kill.point) return;
      held = true;
      reached();
      await released;
    },
  });
  mocks.push(mock);
  const model = protocol === "openai" ? "gpt-4o-mini" : "anthropic:claude-haiku-4-5";
  const { dir, db } = project({ "eval.mjs": batchEval(n, "batch: { pollSeconds: 0.05 },", model) });
  const runId = `r_kill_${protocol}_${kill.point ?? "commit"}`;
  const env = {
    ...envOf(mock),
    ...(kill.batchEnded ? { STET_FAULT_KILL_AT: "batch-ended" } : {}),
  };
  const child = startCli(["run", "eval.mjs", "--run-id", runId], { cwd: dir, env });
  if (kill.point) {
    const ended = child.done.then(() => {
      throw new Error(`the run ended before the server reached "${kill.point}"`);
    });
    await Promise.race([atPoint, ended]);
    child.child.kill("SIGKILL");
  }
  const killed = await child.done;
  release();
  expect(killed.signal, killed.stderr).toBe("SIGKILL");
  const before = scoredKeys(db, runId);
  expect(before).toBeLessThan(n);
  const shown = await runCli(["show", runId], { cwd: dir });
  expect(shown.code, shown.stderr).toBe(0);

  const resumed = await runCli(["resume", runId], { cwd: dir, env: envOf(mock) });
  expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
  expect(scoredKeys(db, runId)).toBe(n);
  return { mock, before, shown: shown.stdout };
}

const POINTS: BatchPoint[] = ["upload", "create", "poll", "poll-ended", "download"];

describe("a batched run killed at any point, then resumed (OpenAI's Batch API)", () => {
  it.each(POINTS)(
    "killed at %s: every key scored, one batch, nothing billed twice",
    async (point) => {
      const { mock, shown } = await killThenResume("openai", { point });
      // While killed, `stet show` says what the run waits on: the batch, by id once stet knew it.
      expect(shown).toMatch(
        /batches {2}waiting on 1 of 1\n {2}\S+.* · openai · 20 requests · (recorded|submitted) \d+m ago/,
      );
      if (point === "poll" || point === "poll-ended" || point === "download") {
        expect(shown).toContain(mock.batches[0]!.id);
      }
      expect(mock.batches).toHaveLength(1);
      expect(mock.batches[0]!.items).toHaveLength(N);
      const billed = mock.billed();
      expect(Object.keys(billed)).toHaveLength(N);
      expect(Object.values(billed).every((n) => n === 1)).toBe(true);
    },
    60_000,
  );

  it("killed once the results are downloaded, before they are committed: downloaded again, never bought", async () => {
    const { mock, before } = await killThenResume("openai", { batchEnded: true });
    expect(before).toBe(0);
    expect(mock.batches).toHaveLength(1);
    expect(Object.values(mock.billed()).every((n) => n === 1)).toBe(true);
  }, 60_000);
});

describe("a batched run killed at any point, then resumed (Anthropic's Message Batches)", () => {
  // Anthropic has no upload: the batch is created by the one POST that carries its requests, so
  // "before the create" is the record alone (the POST never went out), tested on OpenAI's format.
  // A batch whose id a kill lost is found by its custom ids once it ended (see docs/batch.md).
  const points: BatchPoint[] = ["create", "poll", "poll-ended", "download"];
  it.each(points)(
    "killed at %s: every key scored, one batch, nothing billed twice",
    async (point) => {
      const { mock } = await killThenResume("anthropic", { point });
      expect(mock.batches).toHaveLength(1);
      expect(mock.batches[0]!.protocol).toBe("anthropic");
      const billed = mock.billed();
      expect(Object.keys(billed)).toHaveLength(N);
      expect(Object.values(billed).every((n) => n === 1)).toBe(true);
    },
    60_000,
  );

  it("killed once the results are downloaded, before they are committed: never bought again", async () => {
    const { mock } = await killThenResume("anthropic", { batchEnded: true });
    expect(mock.batches).toHaveLength(1);
    expect(Object.values(mock.billed()).every((n) => n === 1)).toBe(true);
  }, 60_000);
});
