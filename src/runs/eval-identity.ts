import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Scorer, SolverFn } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { createSecretRedactor, redactConfig, type Secret } from "../core/secrets.js";
import type { SampleLimits } from "../core/limits.js";
import { sourceSha256 } from "../core/source-hash.js";
import type { RunIdentity, ScorerIdentity } from "../core/types.js";

export { layoutFree } from "../core/source-hash.js";

/** What an identity is computed from: an eval as it is now (name and epochs as it declares them). */
export interface IdentitySource {
  name: string;
  solver: SolverFn;
  scorers: readonly Scorer[];
  epochs: number;
  /** The per-sample limits (none: the identity has no `limits`). */
  limits?: SampleLimits | undefined;
}

/**
 * What defines a run of `ev`: its name, the solver's resolved description (`describe()`, else the
 * sha256 of the function's source), each scorer's name and configuration (`describe()`, else the
 * sha256 of its `score` source), the epochs the eval declares, its per-sample limits (when it
 * has any), and the sha256 of the eval file's bytes. Credential-like keys and every secret in `secrets` are replaced, as in the run's config.
 *
 * @example const identity = evalIdentity(resolved, "/work/evals/qa.ts");
 */
export function evalIdentity(
  ev: IdentitySource,
  evalPath?: string,
  secrets: readonly Secret[] = [],
): RunIdentity {
  const identity: RunIdentity = {
    evalName: ev.name,
    solver: solverIdentity(ev.solver),
    scorers: ev.scorers.map(scorerIdentity),
    epochs: ev.epochs,
  };
  const fileHash = evalPath === undefined ? undefined : fileSha256(evalPath);
  if (fileHash !== undefined) identity.evalFileSha256 = fileHash;
  if (ev.limits !== undefined && Object.keys(ev.limits).length > 0) identity.limits = ev.limits;
  const all = [
    ...secrets,
    ...(ev.solver.secrets?.() ?? []),
    ...ev.scorers.flatMap((s) => s.secrets?.() ?? []),
  ];
  return createSecretRedactor(all).json(redactConfig(identity) as unknown as Json)
    .value as unknown as RunIdentity;
}

function solverIdentity(solver: SolverFn): Record<string, Json> {
  return (
    solver.describe?.() ?? {
      kind: "function",
      name: solver.name || "anonymous",
      sourceSha256: sourceSha256(solver),
    }
  );
}

function scorerIdentity(scorer: Scorer): ScorerIdentity {
  return {
    name: scorer.name,
    config: scorer.describe?.() ?? { kind: "function", sourceSha256: sourceSha256(scorer.score) },
  };
}

function fileSha256(path: string): string | undefined {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return undefined;
  }
}
