import { StetError } from "../core/errors.js";
import { canonicalJson } from "../core/json.js";
import { compareKeys, keyString } from "../core/keys.js";
import type { AttemptFacts } from "../core/plan.js";
import type { AttemptDraft, Key } from "../core/types.js";
import type { ImportRecord } from "./read-import-file.js";

export interface ImportPlanInput {
  records: readonly ImportRecord[];
  /**
   * The ids and fingerprints of the run's samples (those the records name suffice), and its
   * epochs: every record must map to one of its keys.
   */
  snapshot: readonly { sampleId: string; fingerprint: string }[];
  epochs: number;
  /** The attempts the run already has (those of the records' samples suffice). */
  stored: readonly AttemptFacts[];
  /** Provenance source of the inserted attempts: `sha256:<hex of the file>`. */
  source: string;
  /**
   * The records are the run's own executed attempts (its fallback file): they keep their
   * provenance, so the run's total spend counts them, once, as it would have had the store
   * taken them. Anything else is marked imported and adds no spend.
   */
  ownAttempts?: boolean;
  /** Named in errors. */
  file: string;
}

export interface ImportPlan {
  /** Completed attempts to insert, in key order, with the snapshot's fingerprints. */
  drafts: AttemptDraft[];
  /** Keys the run already has scored: left untouched. */
  alreadyScored: Key[];
  /** Keys whose record in the file is an error, not completed work: not imported. */
  notCompleted: Key[];
}

/**
 * Decides what an import inserts. Every record must name a sample of the run (by id), an epoch
 * within the run's epochs and, when the record carries a fingerprint (stet's own results do),
 * the snapshot's fingerprint; otherwise the import is refused (StetError `E_INVALID_INPUT`)
 * naming every offending id. Two different completed results for one key are refused too.
 * Keys already scored in the run are skipped, errors are not imported. Pure.
 *
 * @example const { drafts, alreadyScored } = planImport({ records, snapshot, epochs: 1, stored: heads, source, file });
 */
export function planImport(input: ImportPlanInput): ImportPlan {
  const fingerprints = new Map(input.snapshot.map((r) => [r.sampleId, r.fingerprint]));
  checkRecords(input, fingerprints);
  // Per key, the number of its newest scored attempt: what a draft must follow to be new (a
  // re-run's own attempt, `rerunAfter`, follows an older one).
  const newestScored = new Map<string, number>();
  for (const a of input.stored) {
    if (a.status !== "scored" || fingerprints.get(a.sampleId) !== a.fingerprint) continue;
    const k = keyString(a);
    newestScored.set(k, Math.max(newestScored.get(k) ?? 0, a.attempt ?? 1));
  }
  const isScored = (d: AttemptDraft) =>
    (newestScored.get(keyString(d)) ?? 0) > (input.ownAttempts ? (d.rerunAfter ?? 0) : 0);
  const chosen = new Map<string, AttemptDraft>();
  const notCompleted = new Map<string, Key>();
  const conflicts = new Set<string>();
  for (const { attempt } of input.records) {
    const key = { sampleId: attempt.sampleId, epoch: attempt.epoch };
    const k = keyString(key);
    if (attempt.status !== "scored") {
      notCompleted.set(k, key);
      continue;
    }
    const { runId: _r, storedAttempt: _a, ...fields } = attempt;
    const draft: AttemptDraft = {
      ...fields,
      fingerprint: fingerprints.get(attempt.sampleId)!,
      provenance:
        input.ownAttempts && fields.provenance
          ? fields.provenance
          : { kind: "imported", source: input.source },
    };
    const held = chosen.get(k);
    if (held && canonicalJson(held) !== canonicalJson(draft)) conflicts.add(describe(key));
    chosen.set(k, draft);
  }
  if (conflicts.size > 0) {
    refuse(input.file, "holds different completed results for", [...conflicts]);
  }
  for (const k of chosen.keys()) notCompleted.delete(k);
  const drafts = [...chosen.values()].sort(compareKeys);
  return {
    drafts: drafts.filter((d) => !isScored(d)),
    alreadyScored: drafts.filter(isScored).map(toKey),
    notCompleted: [...notCompleted.values()].sort(compareKeys),
  };
}

function checkRecords(input: ImportPlanInput, fingerprints: ReadonlyMap<string, string>): void {
  const unknown = new Set<string>();
  const badEpoch = new Set<string>();
  const changed = new Set<string>();
  for (const { attempt } of input.records) {
    const fingerprint = fingerprints.get(attempt.sampleId);
    if (fingerprint === undefined) unknown.add(attempt.sampleId);
    else if (attempt.epoch > input.epochs) badEpoch.add(describe(attempt));
    else if (attempt.fingerprint !== undefined && attempt.fingerprint !== fingerprint) {
      changed.add(attempt.sampleId);
    }
  }
  if (unknown.size > 0)
    refuse(input.file, "has test_case_ids that are not samples of the run:", [...unknown]);
  if (badEpoch.size > 0) {
    refuse(input.file, `has attempts beyond the run's ${input.epochs} epoch(s):`, [...badEpoch]);
  }
  if (changed.size > 0) {
    refuse(
      input.file,
      "has results for samples whose content differs from the run's (fingerprint mismatch):",
      [...changed],
    );
  }
}

function describe(key: Key): string {
  return `${key.sampleId} (epoch ${key.epoch})`;
}

function toKey(draft: AttemptDraft): Key {
  return { sampleId: draft.sampleId, epoch: draft.epoch };
}

function refuse(file: string, problem: string, ids: string[]): never {
  const shown = ids
    .slice(0, 10)
    .map((id) => JSON.stringify(id))
    .join(", ");
  const more = ids.length > 10 ? ` and ${ids.length - 10} more` : "";
  throw new StetError(
    "E_INVALID_INPUT",
    `${file} ${problem} ${shown}${more}; nothing was imported`,
    {
      details: { ids },
    },
  );
}
