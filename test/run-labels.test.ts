import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { runCli } from "./helpers/cli.js";
import { startServe } from "./helpers/serve.js";
import { evalProject } from "./helpers/eval-project.js";

// Run labels through the real CLI: given with --label, recorded from a git checkout and from a
// GitHub Actions environment, redacted like everything else, listed and filtered by the CLI and
// the API.

const EVAL = `import { defineEval } from "stet";
export default defineEval({
  name: "labelled",
  dataset: [{ id: "a", input: "1", target: "1" }, { id: "b", input: "2", target: "2" }],
  solver: (sample) => String(sample.input),
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

/** An environment with nothing of GitHub Actions in it (the suite itself may run in Actions). */
const NOT_ACTIONS: NodeJS.ProcessEnv = { GITHUB_ACTIONS: "" };
const SECRET = "sk-label-secret-4242";

let project: ReturnType<typeof evalProject>;
let store: string;

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, { cwd: project.dir, env: { ...NOT_ACTIONS, ...env } });
}

async function run(extra: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const result = await cli(["run", "eval.mjs", "--store", store, "--json", ...extra], env);
  expect(result.code).toBe(0);
  return (JSON.parse(result.stdout) as { runId: string }).runId;
}

async function labelsOf(runId: string): Promise<Record<string, string>> {
  const listed = await cli(["list", "--store", store, "--json"]);
  const rows = JSON.parse(listed.stdout) as { id: string; labels: Record<string, string> }[];
  return rows.find((r) => r.id === runId)!.labels;
}

function git(...args: string[]): string {
  return execFileSync("git", args, { cwd: project.dir, encoding: "utf8" }).trim();
}

beforeAll(() => {
  project = evalProject({ "eval.mjs": EVAL, "notes.txt": "v1\n" });
  store = join(project.dir, "stet.db");
});
afterAll(() => project.cleanup());

describe("run labels", () => {
  it("records --label and nothing of git outside a checkout", async () => {
    const id = await run(["--label", "team=evals", "--label", "suite=nightly,os=linux"]);
    expect(await labelsOf(id)).toEqual({ os: "linux", suite: "nightly", team: "evals" });
    const shown = await cli(["show", id, "--store", store]);
    expect(shown.stdout).toContain("labels  os=linux suite=nightly team=evals");
    const json = JSON.parse((await cli(["show", id, "--store", store, "--json"])).stdout) as {
      labels: object;
    };
    expect(json.labels).toEqual({ os: "linux", suite: "nightly", team: "evals" });
  });

  it("records a git checkout's commit, branch and dirty tree", async () => {
    git("init", "-q", "-b", "main");
    git("add", "eval.mjs", "notes.txt");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one");
    const clean = await run([]);
    expect(await labelsOf(clean)).toEqual({
      branch: "main",
      commit: git("rev-parse", "HEAD"),
      dirty: "false",
    });
    // Without git on the PATH: no git labels, and the run goes on all the same.
    const noGit = await run(["--label", "ok=1"], { PATH: join(project.dir, "no-bin") });
    expect(await labelsOf(noGit)).toEqual({ ok: "1" });
    writeFileSync(join(project.dir, "notes.txt"), "v2\n");
    git("checkout", "-q", "-b", "fix/prompt");
    // A --label wins over what stet records itself.
    const dirty = await run(["--label", "commit=mine"]);
    expect(await labelsOf(dirty)).toEqual({ branch: "fix/prompt", commit: "mine", dirty: "true" });
  });

  it("records a GitHub Actions pull request's ref, sha, number and run URL", async () => {
    const actions = {
      GITHUB_ACTIONS: "true",
      GITHUB_REF: "refs/pull/42/merge",
      GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567",
      GITHUB_HEAD_REF: "feature/faster",
      GITHUB_REF_NAME: "42/merge",
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_REPOSITORY: "acme/app",
      GITHUB_RUN_ID: "987654",
    };
    const id = await run([], actions);
    expect(await labelsOf(id)).toMatchObject({
      branch: "feature/faster",
      "github.ref": "refs/pull/42/merge",
      "github.sha": actions.GITHUB_SHA,
      pr: "42",
      "github.run": "https://github.com/acme/app/actions/runs/987654",
    });
    // A pull_request_target run's ref is the base branch's: the number comes from the event file.
    const event = join(project.dir, "event.json");
    writeFileSync(event, JSON.stringify({ action: "opened", pull_request: { number: 7 } }));
    const target = await run([], {
      ...actions,
      GITHUB_REF: "refs/heads/main",
      GITHUB_EVENT_PATH: event,
    });
    expect(await labelsOf(target)).toMatchObject({ pr: "7", "github.ref": "refs/heads/main" });
  });

  it("redacts a label holding an API key's value, in the store's bytes too", async () => {
    const id = await run(["--label", `leak=${SECRET}`, "--label", "ok=yes"], {
      OPENAI_API_KEY: SECRET,
    });
    expect(await labelsOf(id)).toMatchObject({ leak: "[redacted]", ok: "yes" });
    expect(readFileSync(store).includes(Buffer.from(SECRET))).toBe(false);
  });

  it("filters the list by labels, in text and JSON", async () => {
    const listed = await cli(["list", "--store", store, "--label", "team=evals", "--json"]);
    expect(listed.code).toBe(0);
    const rows = JSON.parse(listed.stdout) as { labels: Record<string, string> }[];
    expect(rows.map((r) => r.labels.team)).toEqual(["evals"]);
    const text = await cli(["list", "--store", store, "--label", "branch=main,dirty=false"]);
    expect(text.stdout).toMatch(/labels/);
    expect(text.stdout.trim().split("\n")).toHaveLength(2);
    expect(text.stdout).toContain("branch=main commit=");
    const none = await cli(["list", "--store", store, "--label", "branch=nowhere"]);
    expect(none.stdout).toContain("no runs labelled branch=nowhere");
  });

  it.each([
    [["--label", "novalue"], /--label "novalue": write it as key=value/],
    [["--label", "bad key=x"], /label key "bad key" must be/],
    [["--label", "a=1,a=2"], /--label: a is given twice/],
  ])("refuses %j with exit 2, recording no run", async (args, message) => {
    const before = await cli(["list", "--store", store, "--json"]);
    const result = await cli(["run", "eval.mjs", "--store", store, ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const after = await cli(["list", "--store", store, "--json"]);
    expect(after.stdout).toBe(before.stdout);
  });

  it("lists and filters labels through the API", async () => {
    expect(existsSync(store)).toBe(true);
    const opened = openSqliteStore(store);
    try {
      const app = createApp({ store: opened });
      const page = (await (await app.request("/api/runs?label=team=evals")).json()) as {
        runs: { id: string; labels: Record<string, string> }[];
      };
      expect(page.runs).toHaveLength(1);
      expect(page.runs[0]!.labels).toMatchObject({ team: "evals", os: "linux" });
      const both = await app.request("/api/runs?label=branch=main&label=dirty=false");
      expect(((await both.json()) as { runs: unknown[] }).runs).toHaveLength(1);
      const detail = (await (await app.request(`/api/runs/${page.runs[0]!.id}`)).json()) as {
        labels: Record<string, string>;
      };
      expect(detail.labels).toEqual(page.runs[0]!.labels);
      const bad = await app.request("/api/runs?label=nokey");
      expect(bad.status).toBe(400);
      expect(await bad.text()).toContain("query.label");
    } finally {
      await opened.close();
    }
  });

  it.skipIf(SKIP_BROWSER)("shows a run's labels on its page in the UI", async () => {
    const listed = await cli(["list", "--store", store, "--label", "team=evals", "--json"]);
    const { id } = (JSON.parse(listed.stdout) as { id: string }[])[0]!;
    const server = await startServe(["--store", store]);
    try {
      const { page, close } = await openPage(`${server.url}/#/runs/${id}`);
      try {
        const labels = page.locator("p.meta.labels");
        await labels.waitFor();
        expect(await labels.textContent()).toBe("Labels: os=linux suite=nightly team=evals ");
      } finally {
        await close();
      }
    } finally {
      server.proc.child.kill("SIGKILL");
      await server.proc.done;
    }
  });
});
