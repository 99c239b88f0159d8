import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import * as z from "zod";
import { LABEL_VALUE_MAX, type RunLabels } from "../core/labels.js";

/** How long each git command may take: a slow or hung git costs a run this much, not more. */
const GIT_TIMEOUT_MS = 3000;
/** An event file larger than this is not read (GitHub's are a few kilobytes to a megabyte). */
const EVENT_FILE_MAX = 8 * 1024 * 1024;

/**
 * The labels stet records on its own, when it can: the git checkout of `cwd` (`commit`, `branch`,
 * `dirty`: whether a tracked file differs from the commit) and, in GitHub Actions
 * (`GITHUB_ACTIONS=true`), the workflow's `github.ref`, `github.sha`, the pull request's number
 * (`pr`, from `refs/pull/N/merge` or the event file) and the run's URL (`github.run`). In Actions
 * `branch` is the pull request's head branch (`GITHUB_HEAD_REF`) or the pushed branch
 * (`GITHUB_REF_NAME`): its checkout is a detached merge commit. No git, no repository, a git
 * that hangs: no git labels, and never a failure.
 *
 * @example await autoLabels(process.cwd(), process.env) // { branch: "main", commit: "3f2a…", dirty: "false" }
 */
export async function autoLabels(
  cwd: string,
  env: Record<string, string | undefined>,
): Promise<RunLabels> {
  const labels: RunLabels = { ...(await gitLabels(cwd)) };
  if (env.GITHUB_ACTIONS === "true") Object.assign(labels, await githubLabels(env));
  return Object.fromEntries(
    Object.entries(labels).filter(([, v]) => v !== "" && v.length <= LABEL_VALUE_MAX),
  );
}

async function gitLabels(cwd: string): Promise<RunLabels> {
  const [commit, branch, status] = await Promise.all([
    git(cwd, ["rev-parse", "HEAD"]),
    git(cwd, ["rev-parse", "--abbrev-ref", "HEAD"]),
    git(cwd, ["status", "--porcelain", "--untracked-files=no"]),
  ]);
  if (commit === null) return {};
  return {
    commit: commit.trim(),
    // A detached HEAD has no branch to name.
    ...(branch === null || branch.trim() === "HEAD" ? {} : { branch: branch.trim() }),
    ...(status === null ? {} : { dirty: String(status.trim() !== "") }),
  };
}

/** A git command's stdout, or null when git is absent, fails or outlives its timeout. */
function git(cwd: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      "git",
      args,
      // No optional locks: a status taken beside the user's own git must not block it.
      {
        cwd,
        timeout: GIT_TIMEOUT_MS,
        windowsHide: true,
        env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" },
      },
      (error, stdout) => resolve(error ? null : stdout),
    );
  });
}

const eventSchema = z.object({
  number: z.number().int().optional(),
  pull_request: z.object({ number: z.number().int() }).optional(),
});

async function githubLabels(env: Record<string, string | undefined>): Promise<RunLabels> {
  const labels: RunLabels = {};
  const branch = env.GITHUB_HEAD_REF || env.GITHUB_REF_NAME;
  if (branch) labels.branch = branch;
  if (env.GITHUB_REF) labels["github.ref"] = env.GITHUB_REF;
  if (env.GITHUB_SHA) labels["github.sha"] = env.GITHUB_SHA;
  const pr = /^refs\/pull\/(\d+)\//.exec(env.GITHUB_REF ?? "")?.[1] ?? (await eventPr(env));
  if (pr !== undefined) labels.pr = pr;
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: run } = env;
  if (server && repo && run) labels["github.run"] = `${server}/${repo}/actions/runs/${run}`;
  return labels;
}

/** The pull request's number from the workflow's event file, when it has one. */
async function eventPr(env: Record<string, string | undefined>): Promise<string | undefined> {
  if (!env.GITHUB_EVENT_PATH) return undefined;
  try {
    const text = await readFile(env.GITHUB_EVENT_PATH, "utf8");
    if (text.length > EVENT_FILE_MAX) return undefined;
    const event = eventSchema.safeParse(JSON.parse(text));
    if (!event.success) return undefined;
    const number = event.data.pull_request?.number ?? event.data.number;
    return number === undefined ? undefined : String(number);
  } catch {
    // An unreadable or malformed event file: no PR label, as outside a pull request.
    return undefined;
  }
}
