import { defineEval, scorers } from "stet";

/**
 * A two-step agent: it drafts an answer, then asks the model to check the draft and reduce it to
 * the bare answer. Each model call goes through `ctx.chat`, so the attempt records the tokens and
 * cost of both calls (also when a later step fails), and journaled: killed after the draft and
 * resumed, a sample replays the draft and asks only for the check (tool calls go through
 * `ctx.step(name, input, fn)` the same way). Set OPENAI_BASE_URL and OPENAI_API_KEY, then:
 *
 *   npx stet run examples/agent/eval.ts --model gpt-4o-mini
 */
export default defineEval({
  name: "draft-and-check",
  dataset: "./questions.jsonl",
  solver: async (sample, ctx) => {
    const question = String(sample.input);
    const draft = await ctx.chat({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: question }],
    });
    const checked = await ctx.chat({
      model: "gpt-4o-mini",
      system: "Check the draft; reply with the bare answer only.",
      messages: [{ role: "user", content: `Question: ${question}\nDraft: ${draft.content}` }],
    });
    return {
      output: checked.content.trim(),
      transcript: [
        { role: "user", content: question },
        { role: "assistant", content: draft.content },
        { role: "assistant", content: checked.content },
      ],
    };
  },
  scorers: [scorers.includes(), scorers.exact({ caseSensitive: false })],
  concurrency: 4,
});
