/** An eval of `n` samples whose solver is one chat call (`extra`: more fields of the eval). */
export function batchEval(n: number, extra = "", model = "gpt-4o-mini"): string {
  return `import { defineEval, solvers, scorers } from "stet";
export default defineEval({
  name: "batched",
  dataset: Array.from({ length: ${n} }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "answer: question " + i })),
  solver: solvers.chat({ model: "${model}", maxRetries: 0 }),
  scorers: [scorers.exact()],
  ${extra}
});
`;
}
