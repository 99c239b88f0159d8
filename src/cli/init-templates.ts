/**
 * What `stet init` writes into a project: a chat eval that runs as written against any
 * OpenAI-compatible endpoint (it reads OPENAI_API_KEY and OPENAI_BASE_URL, as the chat solver
 * does), its dataset, and the npm script that runs it.
 */

/** The scaffold's files, by path relative to the project. */
export const INIT_FILES: Readonly<Record<string, string>> = {
  "evals/qa.ts": `import { defineEval, scorers, solvers } from "stet";

/**
 * A first eval: five questions with short answers, asked of a chat model through any
 * OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter).
 *
 *   OPENAI_API_KEY=… npm run eval                        # OpenAI
 *   OPENAI_BASE_URL=http://localhost:11434/v1 npm run eval -- --model llama3.2   # Ollama
 *
 * Kill it half-way, then \`npx stet resume <run-id>\`: only what had not finished runs.
 */
export default defineEval({
  name: "qa",
  dataset: "./qa.jsonl",
  solver: solvers.chat({
    model: "gpt-4o-mini",
    system: "Answer with as few words as possible.",
    temperature: 0,
  }),
  scorers: [scorers.includes({ caseSensitive: false }), scorers.exact({ caseSensitive: false })],
  concurrency: 4,
});
`,
  "evals/qa.jsonl": `${[
    { id: "capital-fr", input: "What is the capital of France?", target: "Paris" },
    { id: "add", input: "What is 17 + 25? Answer with a number only.", target: "42" },
    { id: "planet", input: "Which planet is closest to the Sun?", target: "Mercury" },
    { id: "h2o", input: "What is the chemical formula of water?", target: "H2O" },
    { id: "author", input: "Who wrote 'Pride and Prejudice'?", target: "Jane Austen" },
  ]
    .map((row) => JSON.stringify(row))
    .join("\n")}\n`,
};

/** The npm script `stet init` adds to package.json, and its command. */
export const INIT_SCRIPT = { name: "eval", command: "stet run evals/qa.ts" } as const;
