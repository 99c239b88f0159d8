import { defineEval, scorers, solvers } from "stet";

/**
 * A chat-model eval against any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp,
 * OpenRouter). Set OPENAI_BASE_URL and OPENAI_API_KEY, then:
 *
 *   npx stet run examples/chat/eval.ts --model gpt-4o-mini
 */
export default defineEval({
  name: "chat-basics",
  dataset: "./questions.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", system: "Answer tersely.", temperature: 0 }),
  scorers: [scorers.includes(), scorers.exact({ caseSensitive: false })],
  epochs: 1,
  concurrency: 4,
});
