import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Scorer, SolverFn } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { createSecretRedactor, redactConfig, type Secret } from "../core/secrets.js";
import type { SampleLimits } from "../core/limits.js";
import { sourceSha256 } from "../core/source-hash.js";
import type { RunIdentity, ScorerIdentity } from "../core/types.js";
import { localModules } from "../eval/local-modules.js";

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
 * has any), and the sha256 of the eval file's bytes. A function solver's or scorer's identity also
 * covers the local modules the eval file imports (`modules`: path → hash, see `localModules`),
 * and so does an agent's (its tools are code), so an edited helper module is a changed eval.
 * Credential-like keys and every secret in `secrets` are replaced, as in the run's config.
 *
 * @example const identity = evalIdentity(resolved, "/work/evals/qa.ts");
 */
export function evalIdentity(
  ev: IdentitySource,
  evalPath?: string,
  secrets: readonly Secret[] = [],
): RunIdentity {
  const described = ev.solver.describe?.();
  // An agent's tools are the user's code, as a function solver is: their modules count too.
  const code = described === undefined || described.kind === "agent";
  const functions = code || ev.scorers.some((s) => !s.describe);
  const found = functions && evalPath !== undefined ? localModules(evalPath) : undefined;
  // None: the identity is what it was before modules were recorded.
  const modules = found && Object.keys(found).length > 0 ? { modules: found } : {};
  const identity: RunIdentity = {
    evalName: ev.name,
    solver: described ? withAgentModules(described, modules) : solverIdentity(ev.solver, modules),
    scorers: ev.scorers.map((scorer) => scorerIdentity(scorer, modules)),
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

type Modules = { modules?: Record<string, string> };

function withAgentModules(described: Record<string, Json>, modules: Modules): Record<string, Json> {
  return described.kind === "agent" && modules.modules
    ? { ...described, modules: modules.modules }
    : described;
}

function solverIdentity(solver: SolverFn, modules: Modules): Record<string, Json> {
  return {
    kind: "function",
    name: solver.name || "anonymous",
    sourceSha256: sourceSha256(solver),
    ...modules,
  };
}

function scorerIdentity(scorer: Scorer, modules: Modules): ScorerIdentity {
  return {
    name: scorer.name,
    config: scorer.describe?.() ?? {
      kind: "function",
      sourceSha256: sourceSha256(scorer.score),
      ...modules,
    },
  };
}

function fileSha256(path: string): string | undefined {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return undefined;
  }
}
