import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { hidePassword, hintLine, importHint, resumeHint, shellQuote } from "./resume-hint.js";

/** The words a POSIX shell makes of `text`, as the program it runs would receive them. */
function shellWords(text: string): string[] {
  const script = `for w in ${text}; do printf '%s\\0' "$w"; done`;
  const out = spawnSync("sh", ["-c", script], { encoding: "utf8" }).stdout;
  return out.split("\0").slice(0, -1);
}

describe("importHint", () => {
  it("restores a fallback file into its run, in the store this invocation used, quoted", () => {
    const file = "/var/tmp/my state/r_1.fallback.jsonl";
    const hint = importHint(file, "r_1", "/data/s.db", {});
    expect(hint.note).toBeNull();
    expect(shellWords(hint.command)).toEqual([
      "stet",
      "import",
      file,
      "--into",
      "r_1",
      "--store",
      "/data/s.db",
    ]);
    const secret = importHint(file, "r_1", undefined, { STET_STORE: "postgres://a:pw@db/x" });
    expect(secret.command).not.toContain("pw");
    expect(secret.note).toMatch(/STET_STORE/);
  });
});

describe("resumeHint", () => {
  it("is a bare stet resume for the default store", () => {
    expect(resumeHint("r_1", undefined, {})).toEqual({ command: "stet resume r_1", note: null });
  });

  it("names the store of --store, else of STET_STORE, quoted so a shell reads it back whole", () => {
    const path = "/tmp/my evals/it's $HOME/s.db";
    const fromFlag = resumeHint("r_1", path, { STET_STORE: "/elsewhere.db" });
    expect(fromFlag.note).toBeNull();
    expect(shellWords(fromFlag.command)).toEqual(["stet", "resume", "r_1", "--store", path]);
    const fromEnv = resumeHint("r_1", undefined, { STET_STORE: "rel/dir/s.db" });
    expect(fromEnv).toEqual({ command: "stet resume r_1 --store rel/dir/s.db", note: null });
  });

  it("prints a PostgreSQL URL without a password as it is", () => {
    const url = "postgres://ann@db:5432/evals?schema=stet&sslmode=require";
    const hint = resumeHint("r_1", url, {});
    expect(hint.note).toBeNull();
    expect(shellWords(hint.command)).toEqual(["stet", "resume", "r_1", "--store", url]);
  });

  it("never prints a password: STET_STORE's is left to the variable, --store's is hidden", () => {
    const url = "postgres://ann:s3cr3t-pw@db/evals?schema=stet";
    const fromEnv = resumeHint("r_1", undefined, { STET_STORE: url });
    expect(fromEnv.command).toBe("stet resume r_1");
    expect(fromEnv.note).toMatch(/STET_STORE/);
    const fromFlag = resumeHint("r_1", url, {});
    expect(fromFlag.command).toBe(
      "stet resume r_1 --store 'postgres://ann:***@db/evals?schema=stet'",
    );
    expect(fromFlag.note).toMatch(/password is not printed.*STET_STORE/);
    for (const hint of [fromEnv, fromFlag]) expect(hintLine(hint)).not.toContain("s3cr3t");
    const inQuery = resumeHint("r_1", "postgresql://db/evals?password=s3cr3t-pw", {});
    expect(hintLine(inQuery)).not.toContain("s3cr3t");
    expect(inQuery.command).toContain("password=***");
  });
});

describe("hidePassword and shellQuote", () => {
  it("hide only passwords, and quote only what a shell would change", () => {
    expect(hidePassword("postgres://ann:p%40ss@db/evals")).toBe("postgres://ann:***@db/evals");
    expect(hidePassword("postgres://ann@db/evals")).toBe("postgres://ann@db/evals");
    expect(hidePassword("postgres://[bad")).toBe("postgres://***");
    expect(shellQuote("/a/b-c_d.db")).toBe("/a/b-c_d.db");
    expect(shellQuote("~/s.db")).toBe("'~/s.db'");
    expect(shellQuote("")).toBe("''");
  });
});
