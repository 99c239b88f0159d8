import type { Scorer } from "../core/eval.js";
import { USES_SANDBOX, type Sandbox } from "../sandbox/index.js";
import { NOT_REFERENCED } from "./result-mapping.js";
import { createGraderRunner, type GraderEnv } from "./run-grader.js";
import type { SuiteGrader, SuiteTestCase } from "./suite-schema.js";
import { graderFor } from "./test-case-sample.js";

/**
 * One scorer per grader the test cases use, named by grader id: the suite's shared graders in
 * suite order, then inline graders in the order first met. A test case runs the graders it
 * references (by id, or inline), or every suite grader when it lists none; its other scores
 * are `{ value: null, skipped: "not_referenced" }` (stet runs one scorer list per eval; metrics
 * leave null scores out and the ResultSet export drops these). Inline graders with one id are
 * one scorer that runs each test case's own definition.
 *
 * @example suiteScorers(suite.graders ?? [], testCases, { endpoint: {} }).map((s) => s.name) // ["gr_exact", "gr_judge"]
 */
export function suiteScorers(
  graders: readonly SuiteGrader[],
  testCases: readonly SuiteTestCase[],
  env: GraderEnv,
): Scorer[] {
  const shared = new Map(graders.map((g) => [g.id, g]));
  const used = new Set<string>();
  for (const tc of testCases) {
    if (tc.graders === undefined) graders.forEach((g) => used.add(g.id));
    for (const ref of tc.graders ?? []) used.add(typeof ref === "string" ? ref : ref.id);
  }
  const names = [
    ...graders.map((g) => g.id).filter((id) => used.has(id)),
    ...[...used].filter((id) => !shared.has(id)),
  ];
  const runsCode =
    graders.some((g) => g.type === "code") ||
    testCases.some((tc) =>
      tc.graders?.some((ref) => typeof ref !== "string" && ref.type === "code"),
    );
  const make = (graderEnv: GraderEnv): Scorer[] => {
    const grade = createGraderRunner(graderEnv);
    return names.map((name, index) => ({
      name,
      score: async (args) => {
        const grader = graderFor(args.sample, name, shared);
        if (grader === undefined) return { value: null, skipped: NOT_REFERENCED };
        return grade(grader, args);
      },
      // A suite with code graders asks for the eval's sandbox (resolveEval checks it first).
      ...(runsCode && {
        [USES_SANDBOX]: async (evalSandbox: () => Promise<Sandbox>) =>
          make({ ...graderEnv, sandbox: await evalSandbox() })[index]!,
      }),
    }));
  };
  return make(env);
}
