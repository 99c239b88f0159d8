import { describe, expect, it } from "vitest";
import { startCli } from "./helpers/cli.js";
import { identityEval, identityProjects, STORE_KINDS } from "./helpers/identity-project.js";
import { SKIP_POSTGRES } from "./helpers/postgres.js";
import { solverCalls, until } from "./helpers/wait.js";

/**
 * Every path that takes an eval for an existing run checks it against the run's identity the
 * same way (`checkEval`), through the real CLI: `stet rescore --eval`, `stet resume`, `stet run
 * --run-id` and a worker of a distributed run. A refusal exits 1 and leaves the store as it was.
 */

const setup = identityProjects();
const EXACT = identityEval("[scorers.exact()]");
const OTHER = identityEval("[scorers.includes()]", { name: "other" });
/** The same eval, name and scorers, with another solver. */
const OTHER_SOLVER = identityEval("[scorers.exact()]", {
  solver: `"answer " + sample.id.slice(1)`,
});

interface Shown {
  metrics: { scorer: string; mean: number | null; samples: number }[];
  config: { scorers: string[]; history?: { change: string; differences: { field: string }[] }[] };
}

describe.each(STORE_KINDS)("another eval's file, on %s", (kind) => {
  it.skipIf(kind === "PostgreSQL" && SKIP_POSTGRES)(
    "stet rescore --eval refuses it as resume and run --run-id do: exit 1, one message, store byte-identical",
    async () => {
      const p = setup(kind, { "eval.mjs": EXACT, "other.mjs": OTHER });
      const first = await p.stet({ DOWN_FROM: "3" }, "run", "eval.mjs", "--run-id", "r1");
      expect(first.code, first.stderr).toBe(3);
      p.calls();
      const before = await p.dump();

      const rescore = await p.stet({}, "rescore", "r1", "--eval", "other.mjs");
      const resume = await p.stet({}, "resume", "r1", "--eval", "other.mjs");
      const named = await p.stet({}, "run", "other.mjs", "--run-id", "r1");
      const allowed = await p.stet(
        {},
        "rescore",
        "r1",
        "--eval",
        "other.mjs",
        "--allow-eval-change",
      );
      for (const refused of [rescore, resume, named, allowed]) {
        expect(refused.code, refused.stderr).toBe(1);
        expect(refused.stderr).toBe(
          'stet: run r1 is a run of eval "scored", not of "other" (the eval given now): a run ' +
            `holds one eval's results. Start a new run for "other", under another id.\n`,
        );
      }
      expect(p.calls()).toEqual([]);
      expect(await p.dump()).toBe(before);
    },
  );
});

describe("stet rescore with the run's eval changed", () => {
  it("another solver is refused as resume refuses it; --allow-eval-change records it, and resume then goes on with it", async () => {
    const p = setup("SQLite", { "eval.mjs": EXACT, "solver2.mjs": OTHER_SOLVER });
    expect((await p.stet({ DOWN_FROM: "3" }, "run", "eval.mjs", "--run-id", "r1")).code).toBe(3);
    p.calls();
    const before = await p.dump();
    const rescore = await p.stet({}, "rescore", "r1", "--eval", "solver2.mjs");
    const resume = await p.stet({}, "resume", "r1", "--eval", "solver2.mjs");
    for (const refused of [rescore, resume]) {
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain(
        "run r1 was started with another eval than the one given now",
      );
      expect(refused.stderr).toContain("solver.sourceSha256:");
      expect(refused.stderr).toContain("pass --allow-eval-change to go on with it anyway");
    }
    expect(rescore.stderr).toBe(resume.stderr);
    expect(await p.dump()).toBe(before);

    const allowed = await p.stet(
      {},
      "rescore",
      "r1",
      "--eval",
      "solver2.mjs",
      "--allow-eval-change",
    );
    expect(allowed.code, allowed.stderr).toBe(3);
    expect(allowed.stdout).toContain("run r1's recorded eval changes (kept in its history):");
    expect(allowed.stdout).toContain("solver.sourceSha256:");
    expect(p.calls()).toEqual([]);
    const shown = JSON.parse((await p.stet({}, "show", "r1", "--json")).stdout) as Shown;
    expect(shown.config.history).toMatchObject([
      {
        change: "rescored",
        differences: expect.arrayContaining([
          expect.objectContaining({ field: "solver.sourceSha256" }),
        ]),
      },
    ]);
    // The run records the new eval now: a resume with it is no change.
    const resumed = await p.stet({}, "resume", "r1", "--eval", "solver2.mjs");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(p.calls()).toEqual(["q3", "q4", "q5"]);
  });

  it("a rescore that changes the run's scorers says so; the eval with the old ones is then refused, with the rescore that goes back", async () => {
    const p = setup("SQLite", {
      "eval.mjs": EXACT,
      "includes.mjs": identityEval("[scorers.includes()]"),
    });
    expect((await p.stet({ DOWN_FROM: "3" }, "run", "eval.mjs", "--run-id", "r1")).code).toBe(3);
    const rescored = await p.stet({}, "rescore", "r1", "--eval", "includes.mjs");
    expect(rescored.code, rescored.stderr).toBe(3);
    expect(rescored.stdout).toContain("run r1's recorded eval changes (kept in its history):");
    expect(rescored.stdout).toContain(
      "its metrics are over includes from now on (were exact); a resume takes an eval with " +
        "these scorers: the eval with the old ones is refused until the run is rescored with it again",
    );
    const shown = JSON.parse((await p.stet({}, "show", "r1", "--json")).stdout) as Shown;
    expect(shown.config.scorers).toEqual(["includes"]);
    expect(shown.metrics).toEqual([{ scorer: "includes", mean: 1, stderr: 0, samples: 3 }]);
    expect(shown.config.history?.map((h) => h.change)).toEqual(["rescored"]);

    const old = await p.stet({}, "resume", "r1");
    expect(old.code).toBe(1);
    expect(old.stderr).toContain("run r1 was started with other scorers than the ones given now");
    expect(old.stderr).toContain("\n  stet rescore r1\n  stet resume r1\n");
    // A rescore that changes nothing says nothing of a change.
    const again = await p.stet({}, "rescore", "r1", "--eval", "includes.mjs");
    expect(again.stdout).not.toContain("recorded eval changes");
  });
});

describe("a distributed run's workers", () => {
  it("refuse an eval with other scorers though nothing is scored (they record nothing), changing nothing", async () => {
    const p = setup("SQLite", { "eval.mjs": EXACT });
    // The first worker is killed while it executes: the run stays running, nothing scored.
    const first = startCli(["run", "eval.mjs", "--distributed", "--run-id", "d1"], {
      cwd: p.dir,
      env: { HANG: "1" },
    });
    await until(() => solverCalls(p.dir).length >= 2, "the first worker's solver calls");
    first.child.kill("SIGKILL");
    await first.done;
    p.calls();

    p.write("eval.mjs", identityEval("[scorers.includes()]"));
    const before = await p.dump();
    const worker = await p.stet({}, "worker", "--run", "d1");
    expect(worker.code, worker.stderr).toBe(1);
    expect(worker.stderr).toContain(
      "run d1 was started with other scorers than the ones given now",
    );
    expect(worker.stderr).toContain("The workers of a distributed run execute the eval it records");
    expect(p.calls()).toEqual([]);
    expect(await p.dump()).toBe(before);
  });

  it("a resume of an errored distributed run with other scorers is refused before the run is reopened", async () => {
    const p = setup("SQLite", { "eval.mjs": EXACT });
    const first = await p.stet(
      { DOWN_FROM: "3" },
      "run",
      "eval.mjs",
      "--distributed",
      "--run-id",
      "d1",
    );
    expect(first.code, first.stderr).toBe(3);
    p.calls();
    p.write("eval.mjs", identityEval("[scorers.includes()]"));
    const before = await p.dump();
    const resumed = await p.stet({}, "resume", "d1");
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(p.calls()).toEqual([]);
    expect(await p.dump()).toBe(before);
    expect(resumed.stderr).toContain(
      "run d1 was started with other scorers than the ones given now",
    );
    const shown = JSON.parse((await p.stet({}, "show", "d1", "--json")).stdout) as {
      status: string;
    };
    expect(shown.status).toBe("errored");
  });
});
