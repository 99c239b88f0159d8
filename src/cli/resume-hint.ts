import { StetError } from "../core/errors.js";
import { shellQuote } from "../core/shell-quote.js";
import { redactPassword } from "../store/postgres/driver.js";
import { isPostgresUrl } from "./open-store.js";

export { shellQuote };

/** A resume command to print, and what to know when it cannot be printed whole. */
export interface ResumeHint {
  /** `stet resume <id>`, with `--store <location>` when the run's store is not the default. */
  command: string;
  /** Set when the command leaves something out (a password); say it beside the command. */
  note: string | null;
}

/** What replaces a password in a printed store URL. */
export const HIDDEN_PASSWORD = "***";

/**
 * The command that resumes a run, as the user can type it: the store is the one this invocation
 * used (`--store`, else `STET_STORE`; see `storeLocation`), passed as `--store`, shell-quoted, so
 * the command works in another shell too. A PostgreSQL URL's password is never printed: from
 * `STET_STORE`, the command leaves `--store` out (the variable still selects the store in this
 * shell); from `--store`, the URL is printed with the password replaced and the note says to
 * give the same URL or to put it in `STET_STORE`.
 *
 * @example resumeHint("r_1", "/tmp/my evals/s.db").command // "stet resume r_1 --store '/tmp/my evals/s.db'"
 */
export function resumeHint(
  runId: string,
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ResumeHint {
  return withStore(`stet resume ${shellQuote(runId)}`, flag, env);
}

/**
 * The command that goes on with an unfinished rescore: the same request, naming the store as
 * `resumeHint` does.
 *
 * @example rescoreHint("r_1", ["--scorer", "judge"], undefined).command // "stet rescore r_1 --scorer judge"
 */
export function rescoreHint(
  runId: string,
  args: readonly string[],
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ResumeHint {
  const base = [`stet rescore ${shellQuote(runId)}`, ...args.map(shellQuote)].join(" ");
  return withStore(base, flag, env);
}

/**
 * A refusal whose message gives the commands to run next (`details.next`: the `stet rescore` and
 * `stet resume` arguments after the run id, see `checkEval`), with those commands naming the
 * store as `resumeHint` does; any other error as it is.
 *
 * @example throw withNextCommands(refusal.error, "r_1", flags.store);
 */
export function withNextCommands(
  error: StetError,
  runId: string,
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): StetError {
  const next = error.details?.next;
  if (!isNext(next)) return error;
  const lines = new Map<string, string>();
  for (const [verb, args] of Object.entries(next)) {
    const base = [`stet ${verb}`, ...[runId, ...args].map(shellQuote)].join(" ");
    lines.set(`  ${base}`, `  ${hintLine(withStore(base, flag, env))}`);
  }
  const message = error.message
    .split("\n")
    .map((line) => lines.get(line) ?? line)
    .join("\n");
  return new StetError(error.code, message, {
    cause: error.cause,
    ...(error.details ? { details: error.details } : {}),
  });
}

function isNext(value: unknown): value is Record<"rescore" | "resume", string[]> {
  const words = (v: unknown) => Array.isArray(v) && v.every((w) => typeof w === "string");
  if (typeof value !== "object" || value === null) return false;
  const { rescore, resume } = value as Record<string, unknown>;
  return words(rescore) && words(resume);
}

/**
 * The command that restores a fallback file (or another backup) into its run, naming the store
 * as `resumeHint` does.
 *
 * @example importHint("/tmp/stet/r_1.fallback.jsonl", "r_1", "s.db").command
 * // "stet import /tmp/stet/r_1.fallback.jsonl --into r_1 --store s.db"
 */
export function importHint(
  file: string,
  runId: string,
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ResumeHint {
  return withStore(`stet import ${shellQuote(file)} --into ${shellQuote(runId)}`, flag, env);
}

function withStore(base: string, flag: string | undefined, env: NodeJS.ProcessEnv): ResumeHint {
  const fromFlag = flag !== undefined;
  const location = flag ?? env.STET_STORE;
  if (location === undefined || location === "") return { command: base, note: null };
  if (isPostgresUrl(location)) {
    const hidden = hidePassword(location);
    if (hidden !== location) {
      if (!fromFlag) {
        return {
          command: base,
          note: "with STET_STORE set as it is now; its URL holds a password, so it is not printed",
        };
      }
      return {
        command: `${base} --store ${shellQuote(hidden)}`,
        note:
          "the store URL's password is not printed: give --store the same URL, " +
          "or put it in STET_STORE and leave --store out",
      };
    }
  }
  return { command: `${base} --store ${shellQuote(location)}`, note: null };
}

/** A hint on one line: the command, then its note in parentheses. */
export function hintLine(hint: ResumeHint): string {
  return hint.note === null ? hint.command : `${hint.command} (${hint.note})`;
}

/**
 * A URL with its password replaced by `***`, in the user info and in any query parameter whose
 * name holds "pass" (`?password=`, `?sslpassword=`); the URL as given when it has none.
 *
 * @example hidePassword("postgres://ann:s3cret@db/evals") // "postgres://ann:***@db/evals"
 */
export function hidePassword(location: string): string {
  // Not a URL we can take apart (no store opens from it): print none of it past the scheme.
  if (!URL.canParse(location))
    return location.replace(/^([a-z]+:\/\/).*$/i, `$1${HIDDEN_PASSWORD}`);
  return redactPassword(location);
}
