import { availableParallelism } from "node:os";
import { defineEval, scorers } from "stet";

/**
 * HumanEval, scored in the sandbox: each sample's program (prompt + completion + the task's
 * tests + `check(entry_point)`) runs under bubblewrap with no network, no home, no secrets. By
 * default the "completion" is the task's canonical solution, so every sample should score 1;
 * with `--model` the completion is asked of that model (OPENAI_BASE_URL, OPENAI_API_KEY).
 *
 *   npx stet run examples/humaneval/eval.ts
 *   npx stet run examples/humaneval/eval.ts --model gpt-4o-mini
 */
interface Task {
  task_id: string;
  prompt: string;
  entry_point: string;
  canonical_solution: string;
  test: string;
}

export default defineEval<Task>({
  name: "humaneval",
  dataset: "./humaneval.jsonl",
  sample: (task) => ({
    id: task.task_id,
    input: task.prompt,
    metadata: {
      entry_point: task.entry_point,
      test: task.test,
      canonical_solution: task.canonical_solution,
    },
  }),
  solver: async (sample, ctx) => {
    if (ctx.model === undefined) return String(sample.metadata?.canonical_solution);
    const { content } = await ctx.chat({
      system:
        "Complete the Python function. Reply with the function body only (indented), no signature, no explanation.",
      messages: [{ role: "user", content: String(sample.input) }],
      temperature: 0,
    });
    return content.replace(/^```(?:python)?\n?|```\s*$/gm, "");
  },
  scorers: [
    scorers.code({
      command: ["python3", "-"],
      program: ({ sample, output }) =>
        `${sample.input}${String(output)}\n\n${sample.metadata?.test}\n\ncheck(${sample.metadata?.entry_point})\n`,
      timeoutMs: 10_000,
    }),
  ],
  sandbox: { kind: "bubblewrap", memoryMb: 1024, maxProcesses: 32 },
  concurrency: availableParallelism(),
});
