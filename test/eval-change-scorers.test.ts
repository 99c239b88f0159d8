import { describe, expect, it } from "vitest";
import { identityEval, identityProjects, STORE_KINDS } from "./helpers/identity-project.js";
import { SKIP_POSTGRES } from "./helpers/postgres.js";

/**
 * An eval whose scorers changed, given to a run that has some (or no) scored attempts, through
 * the real CLI on SQLite and PostgreSQL. A run's metrics are always over the scorers it records:
 * a resume never mixes two sets of scorers (it is refused, with the `stet rescore` command that
 * scores the stored outputs with the new ones first), and a run with nothing scored takes the new
 * scorers as its own.
 */

const setup = identityProjects();
const EXACT = identityEval("[scorers.exact()]");
const INCLUDES = identityEval("[scorers.includes()]");

interface Shown {
  metrics: { scorer: string; mean: number | null; samples: number }[];
  config: { scorers: string[]; history?: { change: string; differences: { field: string }[] }[] };
}

describe.each(STORE_KINDS)("an eval with other scorers, on %s", (kind) => {
  const skip = kind === "PostgreSQL" && SKIP_POSTGRES;

  it.skipIf(skip)(
    "3 keys scored by exact, resumed with includes and 6 keys: refused with the rescore command; after it, every figure is over includes and all 6 keys",
    async () => {
      const p = setup(kind, { "eval.mjs": EXACT });
      const first = await p.stet({ DOWN_FROM: "3" }, "run", "eval.mjs", "--run-id", "r1");
      expect(first.code, first.stderr).toBe(3);
      expect(p.calls()).toEqual(["q0", "q1", "q2", "q3", "q4", "q5"]);

      p.write("eval.mjs", INCLUDES);
      const before = await p.dump();
      for (const flags of [["--allow-eval-change"], []]) {
        const refused = await p.stet({}, "resume", "r1", ...flags);
        expect(refused.code, refused.stderr).toBe(1);
        expect(refused.stderr).toContain(
          "run r1 was started with other scorers than the ones given now",
        );
        expect(refused.stderr).toContain("scorers.exact:");
        expect(refused.stderr).toContain("scorers.includes: null →");
        expect(refused.stderr).toContain(`\n  stet rescore r1${p.storeFlag}\n`);
        expect(refused.stderr).toContain(`\n  stet resume r1${p.storeFlag}\n`);
      }
      expect(p.calls()).toEqual([]);
      expect(await p.dump()).toBe(before);

      // The command the refusal gives: no solver call; it says what it changes.
      const rescored = await p.stet({}, "rescore", "r1");
      expect(rescored.code, rescored.stderr).toBe(3); // q3–q5 have no output yet
      expect(rescored.stdout).toContain("3 stored output(s) to score with includes");
      expect(rescored.stdout).toContain("its metrics are over includes from now on (were exact)");
      expect(p.calls()).toEqual([]);

      const resumed = await p.stet({}, "resume", "r1");
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(p.calls()).toEqual(["q3", "q4", "q5"]);
      expect(resumed.stdout).toMatch(/^includes\s+1\.0000\s+0\.0000\s+6$/m);
      expect(resumed.stdout).not.toMatch(/^exact/m);

      const shown = JSON.parse((await p.stet({}, "show", "r1", "--json")).stdout) as Shown;
      expect(shown.metrics).toEqual([{ scorer: "includes", mean: 1, stderr: 0, samples: 6 }]);
      expect(shown.config.scorers).toEqual(["includes"]);
      expect(shown.config.history).toMatchObject([
        {
          change: "rescored",
          differences: expect.arrayContaining([
            expect.objectContaining({ field: "scorers.exact", current: null }),
            expect.objectContaining({ field: "scorers.includes", recorded: null }),
          ]),
        },
      ]);
      const exported = await p.stet({}, "export", "r1", "--format", "markdown");
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout).toContain("| includes | 1.0000 | 0.0000 | 6 |");
      expect(exported.stdout).not.toContain("exact");
    },
  );

  it.skipIf(skip)(
    "a run with nothing scored yet takes the new scorers as its own: its metrics are over includes",
    async () => {
      const p = setup(kind, { "eval.mjs": EXACT });
      const first = await p.stet({ DOWN_FROM: "0" }, "run", "eval.mjs", "--run-id", "r1");
      expect(first.code, first.stderr).toBe(3);
      p.calls();

      p.write("eval.mjs", INCLUDES);
      const resumed = await p.stet({}, "resume", "r1");
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(p.calls()).toEqual(["q0", "q1", "q2", "q3", "q4", "q5"]);
      expect(resumed.stdout).toMatch(/^includes\s+1\.0000\s+0\.0000\s+6$/m);
      expect(resumed.stdout).not.toMatch(/^exact/m);

      const shown = JSON.parse((await p.stet({}, "show", "r1", "--json")).stdout) as Shown;
      expect(shown.metrics).toEqual([{ scorer: "includes", mean: 1, stderr: 0, samples: 6 }]);
      expect(shown.config.scorers).toEqual(["includes"]);
      expect(shown.config.history).toMatchObject([
        {
          change: "eval-changed",
          differences: expect.arrayContaining([
            expect.objectContaining({ field: "scorers.includes", recorded: null }),
          ]),
        },
      ]);
      const exported = await p.stet({}, "export", "r1", "--format", "markdown");
      expect(exported.stdout).toContain("| includes | 1.0000 | 0.0000 | 6 |");
      expect(exported.stdout).not.toContain("exact");
    },
  );
});

describe("an eval with other scorers, to a run whose outputs have only scorer errors", () => {
  it("scores them again with the changed scorer, not with its old score: no solver call", async () => {
    // "ANSWER N": exact() scores 0, exact({ caseSensitive: false }) 1. "judge" throws while
    // JUDGE_DOWN is set, so every key's outcome is a scorer error and nothing is scored.
    const judge = `{ name: "judge", score: () => { if (process.env.JUDGE_DOWN) throw new Error("judge down"); return 1; } }`;
    const solver = `"ANSWER " + sample.id.slice(1)`;
    const p = setup("SQLite", {
      "eval.mjs": identityEval(`[scorers.exact(), ${judge}]`, { solver }),
    });
    const first = await p.stet({ JUDGE_DOWN: "1" }, "run", "eval.mjs", "--run-id", "r1");
    expect(first.code, first.stderr).toBe(3);
    expect(p.calls()).toHaveLength(6);

    p.write(
      "eval.mjs",
      identityEval(`[scorers.exact({ caseSensitive: false }), ${judge}]`, { solver }),
    );
    const resumed = await p.stet({}, "resume", "r1", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(p.calls()).toEqual([]);
    const report = JSON.parse(resumed.stdout) as Shown & { rescored: number };
    expect(report.rescored).toBe(6);
    expect(report.metrics.map((m) => [m.scorer, m.mean, m.samples])).toEqual([
      ["exact", 1, 6],
      ["judge", 1, 6],
    ]);
  });
});
