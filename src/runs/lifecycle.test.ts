import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../../test/helpers/cli.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "../../test/helpers/postgres.js";
import { tempDir } from "../../test/helpers/temp-store.js";
import type { SolverFn } from "../core/eval.js";
import type { RunEvent } from "../core/events.js";
import type { OwnerIdentity } from "../core/types.js";
import { hostId } from "../engine/owner.js";
import { defineEval } from "../eval/define-eval.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import type { DatasetRow } from "../eval/types.js";
import { loadOutcomes } from "../evalport/build-result-set.js";
import { toResult } from "../evalport/result-mapping.js";
import { scorers } from "../scorers/index.js";
import { serve } from "../server/serve.js";
import { openPostgresStore } from "../store/postgres/index.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/types.js";
import { cancelRun } from "./cancel-run.js";
import { importResults } from "./import-into-run.js";
import { listRuns, readRun } from "./read-run.js";
import { executeResume, planResume, settleResume, type ResumeEval } from "./resume-run.js";
import { prepareStart, runEval } from "./start-run.js";

/** A store of one kind and the location the CLI opens it by. */
interface Opened {
  store: Store;
  location: string;
  dir: string;
}

const STORES: [string, () => Promise<Opened>][] = [
  [
    "sqlite",
    async () => {
      const { dir, cleanup } = tempDir();
      const location = join(dir, "stet.db");
      const store = openSqliteStore(location);
      cleanups.push(cleanup, () => store.close());
      return { store, location, dir };
    },
  ],
  [
    "postgres",
    async () => {
      const { dir, cleanup } = tempDir();
      const { schema, drop } = testSchema();
      const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
      cleanups.push(cleanup, drop, () => store.close());
      const url = new URL(TEST_POSTGRES_URL);
      url.searchParams.set("schema", schema);
      return { store, location: url.toString(), dir };
    },
  ],
];

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * An eval of `n` samples whose solver answers right once a ticket lets it (`allow`), counting its
 * calls per sample. Registered-eval form, as a server holds it, so resumes find it by name.
 */
function gatedEval(n = 6, options: { delayMs?: number } = {}) {
  const calls = new Map<string, number>();
  let tickets = 0;
  const waiting: (() => void)[] = [];
  const allow = (k = Number.POSITIVE_INFINITY) => {
    tickets += k;
    while (waiting.length > 0 && tickets > 0) {
      tickets--;
      waiting.shift()!();
    }
  };
  const solver: SolverFn = async (sample, ctx) => {
    calls.set(sample.id, (calls.get(sample.id) ?? 0) + 1);
    if (tickets > 0) tickets--;
    else {
      await new Promise<void>((resolve, reject) => {
        waiting.push(resolve);
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
      });
    }
    if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
    return String(sample.target);
  };
  const rows: DatasetRow[] = Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    input: `${i}`,
    target: `${i}`,
  }));
  const ev = defineEval({ name: "gated", dataset: rows, solver, scorers: [scorers.exact()] });
  const loaded: LoadedEvalFile = { eval: ev, path: "/nowhere/gated.eval.ts", baseDir: "/" };
  return { loaded, calls, allow, registry: { get: () => loaded } };
}

/** The run's row, attempts and in-flight marks: what "changes nothing" compares. */
async function state(store: Store, runId: string) {
  const run = await store.runs.get(runId);
  if (!run) return undefined;
  const { owner, ...rest } = run;
  const { heartbeatAgeMs: _age, ...ownerFields } = owner ?? { heartbeatAgeMs: 0 };
  return {
    run: { ...rest, owner: owner ? ownerFields : null },
    attempts: await store.reads.listAttempts(runId),
    inflight: await store.runs.listInflight(runId),
  };
}

function deadOwner(): OwnerIdentity {
  const gone = spawnSync(process.execPath, ["-e", ""]).pid!;
  return { host: hostId(), pid: gone, token: `dead-${gone}` };
}

for (const [kind, open] of STORES) {
  describe.skipIf(kind === "postgres" && SKIP_POSTGRES)(`the run lifecycle on ${kind}`, () => {
    /** A run of `gatedEval(n)` stopped by a signal once `done` keys are committed. */
    async function interruptedRun(store: Store, done: number, n = 6) {
      const gated = gatedEval(n);
      const prepared = await prepareStart({ eval: gated.loaded, concurrency: 2 });
      const stop = new AbortController();
      gated.allow(done);
      let committed = 0;
      const report = await runEval({
        ...prepared,
        store,
        signal: stop.signal,
        graceMs: 20,
        onEvent: (e) => {
          if (e.type === "attempt-committed" && ++committed === done) stop.abort();
        },
      });
      expect(report).toMatchObject({ status: "interrupted", counts: { scored: done } });
      return { ...gated, runId: report.runId };
    }

    async function completeRun(store: Store, n = 4) {
      const gated = gatedEval(n);
      gated.allow();
      const prepared = await prepareStart({ eval: gated.loaded });
      const report = await runEval({ ...prepared, store });
      expect(report.status).toBe("completed");
      return { ...gated, runId: report.runId };
    }

    it("starts a run: prepared without touching the store, then executed", async () => {
      const { store } = await open();
      const gated = gatedEval(5);
      const prepared = await prepareStart({ eval: gated.loaded, epochs: 2, limit: 4 });
      expect(await store.runs.get(prepared.runId)).toBeUndefined();
      gated.allow();
      const report = await runEval({ ...prepared, store });
      expect(report).toMatchObject({ runId: prepared.runId, status: "completed" });
      expect(report.counts).toEqual({ total: 8, scored: 8, errored: 0, remaining: 0, limited: 0 });
      expect(await store.runs.get(prepared.runId)).toMatchObject({
        status: "completed",
        owner: null,
        config: { epochs: 2, limit: 4, evalPath: "/nowhere/gated.eval.ts" },
      });
    });

    it("plans a resume with no side effects, then executes exactly the missing keys", async () => {
      const { store } = await open();
      const { runId, calls, allow, registry } = await interruptedRun(store, 2);
      const preserved = (await store.reads.listAttempts(runId)).filter(
        (a) => a.status === "scored",
      );
      expect(preserved).toHaveLength(2);
      const before = await state(store, runId);

      const planning = await planResume({ store, runId, registry });
      expect(planning.ok).toBe(true);
      if (!planning.ok) return;
      expect(planning.resume.plan).toMatchObject({ preserved: 2, total: 6 });
      expect(planning.resume.plan.toExecute).toHaveLength(4);
      expect(await state(store, runId)).toEqual(before);

      allow();
      const events: RunEvent[] = [];
      const report = await executeResume(planning.resume, {
        store,
        onEvent: (e) => events.push(e),
      });
      expect(report).toMatchObject({ status: "completed", preserved: 2, executed: 4 });
      expect(events[0]).toMatchObject({ type: "run-started", resumed: true });
      const attempts = await store.reads.listAttempts(runId);
      expect(attempts.filter((a) => a.status === "scored")).toHaveLength(6);
      // The preserved attempts stand as they were, and their samples were not asked again.
      for (const a of preserved) {
        expect(attempts).toContainEqual(a);
        expect(calls.get(a.sampleId)).toBe(1);
      }
    });

    it.each(["run-not-found", "run-active", "changed-samples", "nothing-to-resume"] as const)(
      "refuses a resume with %s and changes nothing",
      async (reason) => {
        const { store } = await open();
        const setup = reason === "nothing-to-resume" ? completeRun : interruptedRun;
        const { runId, registry } = await setup(store, 2);
        let current: ResumeEval | undefined;
        if (reason === "run-active") {
          const live = { host: hostId(), pid: process.pid, token: "live" };
          expect(await store.runs.claim(runId, live, null)).toBe(true);
        } else if (reason === "changed-samples") {
          const samples = (await store.reads.getSamples(runId)).map((r, i) =>
            i === 0 ? { sample: { ...r.sample, input: "changed" }, fingerprint: "f-new" } : r,
          );
          current = { samples, solver: () => "unused", scorers: [scorers.exact()] };
        }
        const before = await state(store, runId);
        const planning = await planResume({
          store,
          runId: reason === "run-not-found" ? "r_nope" : runId,
          registry,
          // The stand-in eval has another solver too (its scorers are the run's): accepted, so
          // the samples decide.
          ...(current ? { eval: current, allowEvalChange: true } : {}),
        });
        expect(planning.ok).toBe(false);
        if (planning.ok) return;
        expect(planning.refusal.reason).toBe(reason);
        expect(planning.refusal.error.code).toBe(
          {
            "run-not-found": "E_RUN_NOT_FOUND",
            "run-active": "E_RUN_ACTIVE",
            "changed-samples": "E_CHANGED_SAMPLES",
            "nothing-to-resume": "E_NOTHING_TO_RESUME",
          }[reason],
        );
        if (planning.refusal.reason === "changed-samples") {
          expect(planning.refusal.plan.changed).toEqual(["s0"]);
        }
        expect(await state(store, runId)).toEqual(before);
      },
    );

    it("settles a complete run whose owner died before releasing it", async () => {
      const { store } = await open();
      const { runId, registry } = await completeRun(store);
      expect(await store.runs.claim(runId, deadOwner(), null)).toBe(true);
      const planning = await planResume({ store, runId, registry });
      expect(!planning.ok && planning.refusal.reason).toBe("nothing-to-resume");
      if (planning.ok || planning.refusal.reason !== "nothing-to-resume") return;
      const report = await settleResume(planning.refusal.resume, { store });
      expect(report).toMatchObject({ status: "completed", executed: 0 });
      expect(await store.runs.get(runId)).toMatchObject({ status: "completed", owner: null });
    });

    it("cancels through the store: another process's `stet cancel` stops the owner", async () => {
      const { store, location } = await open();
      const gated = gatedEval(400, { delayMs: 10 });
      // Ten samples, then none until the owner has seen the cancel: the run cannot finish
      // before the `stet cancel` process, however slowly it starts, has asked.
      gated.allow(10);
      const prepared = await prepareStart({ eval: gated.loaded, concurrency: 2 });
      let cancel: ReturnType<typeof runCli> | undefined;
      const report = await runEval({
        ...prepared,
        store,
        heartbeatMs: 50,
        onEvent: (e) => {
          if (e.type === "attempt-committed" && e.progress.executed === 5) {
            cancel = runCli(["cancel", prepared.runId, "--store", location, "--json"]);
          }
          if (e.type === "stopping") gated.allow();
        },
      });
      const child = await cancel!;
      expect(child.code, child.stderr).toBe(0);
      expect(JSON.parse(child.stdout)).toMatchObject({ outcome: "stopped", status: "interrupted" });
      expect(report.status).toBe("interrupted");
      expect(report.counts.remaining).toBeGreaterThan(0);
      const run = await store.runs.get(prepared.runId);
      expect(run).toMatchObject({ status: "interrupted", owner: null });
      expect(run?.note).toMatch(/^cancelled \(requested by pid \d+ on /);

      // In-flight samples finished: a resume buys each remaining sample once, and no other.
      const resumed = await executeResume(
        await planResume({ store, runId: prepared.runId, registry: gated.registry }).then((p) => {
          if (!p.ok) throw p.refusal.error;
          return p.resume;
        }),
        { store },
      );
      expect(resumed.status).toBe("completed");
      expect(new Set(gated.calls.values())).toEqual(new Set([1]));
      expect(gated.calls.size).toBe(400);
    });

    it("cancels a run this process executes, at once", async () => {
      const { store } = await open();
      const { runId } = await interruptedRun(store, 1);
      const live = { host: hostId(), pid: process.pid, token: "mine" };
      await store.runs.claim(runId, live, null);
      const stopped: string[] = [];
      const result = await cancelRun({
        store,
        runId,
        stopLocal: (id) => (stopped.push(id), true),
      });
      expect(result.status).toBe("stopping");
      expect(stopped).toEqual([runId]);
    });

    it.each([
      ["a finished run", "E_RUN_NOT_RUNNING"],
      ["a live owner's run, through the store refused", "E_RUN_ACTIVE"],
      ["a dead owner's run", undefined],
    ] as const)("cancels %s → %s", async (what, code) => {
      const { store } = await open();
      const { runId } = await (what === "a finished run"
        ? completeRun(store)
        : interruptedRun(store, 1));
      if (what !== "a finished run") {
        const owner =
          what === "a dead owner's run"
            ? deadOwner()
            : { host: "elsewhere#1", pid: 1, token: "live-elsewhere" };
        expect(await store.runs.claim(runId, owner, null)).toBe(true);
      }
      const before = await state(store, runId);
      const cancelling = cancelRun({ store, runId, throughStore: false });
      if (code) {
        await expect(cancelling).rejects.toMatchObject({ code });
        expect(await state(store, runId)).toEqual(before);
      } else {
        await expect(cancelling).resolves.toMatchObject({ status: "interrupted" });
        expect((await store.runs.get(runId))?.note).toMatch(
          /died .*interrupted by a cancel request/,
        );
      }
    });

    it("imports into a run: only the keys it lacks, settled by the status rule", async () => {
      const { store, dir } = await open();
      const source = await completeRun(store, 6);
      const { outcomes } = await loadOutcomes(store, source.runId);
      const file = join(dir, "results.jsonl");
      writeFileSync(
        file,
        outcomes.map((a) => JSON.stringify(toResult(a, { epochs: 1 }))).join("\n"),
      );
      const { runId } = await interruptedRun(store, 2);

      const report = await importResults({ store, runId, file });
      expect(report).toMatchObject({ previousStatus: "interrupted", status: "completed" });
      expect(report.imported).toHaveLength(4);
      expect(report.alreadyScored).toHaveLength(2);
      const attempts = await store.reads.listAttempts(runId);
      expect(attempts.filter((a) => a.provenance.kind === "imported")).toHaveLength(4);
      expect(await store.runs.get(runId)).toMatchObject({ status: "completed", owner: null });
      // A second import adds nothing and writes nothing.
      const before = await state(store, runId);
      expect((await importResults({ store, runId, file })).imported).toEqual([]);
      expect(await state(store, runId)).toEqual(before);
    });

    it("recovers a dead owner's run on read, only when asked", async () => {
      const { store } = await open();
      const a = await interruptedRun(store, 1);
      const b = await interruptedRun(store, 1);
      for (const { runId } of [a, b]) await store.runs.claim(runId, deadOwner(), null);

      // A plain read derives what the run is, interrupted, and writes nothing.
      const plain = await readRun(store, a.runId);
      expect(plain.run.status).toBe("interrupted");
      expect(plain.report.status).toBe("interrupted");
      expect(plain.orphaned).toBe(true);
      expect(plain.owner).toMatchObject({ alive: false, reason: expect.stringMatching(/is gone/) });
      expect(await store.runs.get(a.runId)).toMatchObject({ status: "running", note: null });

      const recovered = await readRun(store, a.runId, { recover: true });
      expect(recovered).toMatchObject({
        run: { status: "interrupted" },
        owner: null,
        orphaned: false,
      });
      expect(recovered.run.note).toMatch(/died/);
      const listed = await listRuns(store, {}, { recover: true });
      expect(listed.map((l) => l.run.status)).toEqual(["interrupted", "interrupted"]);
    });

    it("recovers a dead owner's run when a server boots", async () => {
      const { store } = await open();
      const { runId } = await interruptedRun(store, 1);
      await store.runs.claim(runId, deadOwner(), null);
      const logs: string[] = [];
      const server = await serve({ store, host: "127.0.0.1", port: 0, log: (l) => logs.push(l) });
      try {
        expect(await store.runs.get(runId)).toMatchObject({ status: "interrupted", owner: null });
        expect(logs).toEqual([expect.stringContaining(`recovered run ${runId}`)]);
      } finally {
        await server.shutdown();
      }
    });
  });
}
