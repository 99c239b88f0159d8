import type { Key } from "../../core/types.js";
import { importResults } from "../../runs/import-into-run.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { EXIT } from "../exit-codes.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { formatKey } from "../render/format.js";
import { hintLine, resumeHint } from "../resume-hint.js";

export interface ImportFlags {
  into: string;
  sha256?: string;
  store?: string;
  json?: boolean;
}

/**
 * `stet import <file> --into <run-id>`: restores completed work from a ResultSet, a Results
 * JSONL or a fallback JSONL into a run, all or nothing (see `importResults`). Prints what was
 * imported, what was already there, and how the run stands; `--json` prints the report.
 */
export async function importCommand(file: string, flags: ImportFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const store = await openStore(flags.store, stale);
  try {
    const report = await importResults({
      store,
      runId: flags.into,
      file,
      ...(flags.sha256 === undefined ? {} : { sha256: flags.sha256 }),
      ...stale,
    });
    if (flags.json) {
      io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return EXIT.ok;
    }
    const { imported, alreadyScored, notCompleted, runId } = report;
    io.say(
      `imported ${imported.length} result(s) into run ${runId} from ${file} (${report.source})`,
    );
    if (alreadyScored.length > 0) {
      io.say(`skipped ${alreadyScored.length} the run already had: ${preview(alreadyScored)}`);
    }
    if (notCompleted.length > 0) {
      io.say(`not imported, errors in the file: ${notCompleted.length} (${preview(notCompleted)})`);
    }
    const { scored, total, remaining } = report.counts;
    const next =
      remaining > 0 ? `; ${remaining} left: ${hintLine(resumeHint(runId, flags.store))}` : "";
    io.say(`run ${runId}: ${report.status}, ${scored}/${total} keys scored${next}`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

function preview(keys: readonly Key[]): string {
  const shown = keys.slice(0, 5).map(formatKey);
  return keys.length > 5 ? `${shown.join(", ")} and ${keys.length - 5} more` : shown.join(", ");
}
