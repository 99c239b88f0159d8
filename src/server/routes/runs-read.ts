import { Hono, type Context } from "hono";
import { stream } from "hono/streaming";
import * as z from "zod";
import type {
  JournalStepView,
  RunsPageView,
  SampleDetailView,
  SamplePageView,
} from "../../api/contract.js";
import { isStetError } from "../../core/errors.js";
import { parseLabels, type RunLabels } from "../../core/labels.js";
import { runStatusSchema } from "../../core/schemas.js";
import { prepareResultSet, writeResultSet } from "../../evalport/write-result-set.js";
import { runBatches } from "../../runs/run-batches.js";
import { listRunsWithFigures } from "../../runs/list-run-figures.js";
import { requireRun } from "../../runs/require-run.js";
import { ApiError } from "../api-error.js";
import type { AppDeps } from "../app-deps.js";
import { attemptSummary } from "../execution-messages.js";
import { runDetail, runSummary } from "../run-view.js";
import { pagingSchema, parseQuery } from "../validate.js";
import { trajectoryStep } from "../../evalport/trajectory.js";
import { trajectoryUsage } from "../../core/usage.js";

const listQuery = pagingSchema.extend({
  status: runStatusSchema.optional(),
  eval: z.string().min(1).optional(),
  benchmark: z.string().min(1).optional(),
});

/**
 * The `label` query parameters (`?label=branch=main&label=pr=7`, or comma-separated): every one
 * must match. A malformed one is a 400 naming it.
 */
function labelsQuery(c: Context): RunLabels {
  try {
    return parseLabels(c.req.queries("label") ?? [], "query.label");
  } catch (error) {
    if (isStetError(error, "E_USAGE")) throw new ApiError(400, "invalid_request", error.message);
    throw error;
  }
}

const samplesQuery = pagingSchema.extend({
  status: z.enum(["scored", "error", "pending"]).optional(),
  scorer: z.string().min(1).optional(),
  result: z.enum(["pass", "fail"]).optional(),
  search: z.string().min(1).max(500).optional(),
});

/**
 * GET /runs, /runs/:id, /runs/:id/samples, /runs/:id/samples/:sampleId, /runs/:id/resultset.
 *
 * @example app.route("/api", runsReadRoutes(deps));
 */
export function runsReadRoutes(deps: AppDeps): Hono {
  const { store, redact } = deps;
  const staleMs = deps.engine.staleMs;
  const app = new Hono();

  app.get("/runs", async (c) => {
    const q = parseQuery(c, listQuery);
    const labels = labelsQuery(c);
    // A benchmark is the runs of one eval, so both filters name an eval.
    if (q.eval && q.benchmark && q.eval !== q.benchmark) {
      return c.json({
        runs: [],
        limit: q.limit,
        offset: q.offset,
        nextOffset: null,
      } satisfies RunsPageView);
    }
    const evalName = q.eval ?? q.benchmark;
    // With each run's metrics and spend, from one read of the store for the whole page.
    const listed = await listRunsWithFigures(store, {
      ...(q.status ? { status: q.status } : {}),
      ...(evalName ? { evalName } : {}),
      labels,
      limit: q.limit + 1,
      offset: q.offset,
    });
    // A dead owner's run reads as interrupted (runSummary), so it is no longer one of the
    // running runs; nextOffset still counts the store's rows, so paging skips nothing.
    const page = listed.slice(0, q.limit);
    const batches = await runBatches(
      store,
      page.map((l) => l.run.id),
    );
    const runs = page
      .map((l) => ({
        ...runSummary(l.run, l.counts, staleMs, l.activeWorkers),
        ...(batches.has(l.run.id) ? { batches: batches.get(l.run.id)! } : {}),
        metrics: l.metrics,
        cost: { spent: l.spent },
      }))
      .filter((r) => !q.status || r.status === q.status);
    const nextOffset = listed.length > q.limit ? q.offset + q.limit : null;
    return c.json(
      redact({ runs, limit: q.limit, offset: q.offset, nextOffset } satisfies RunsPageView),
    );
  });

  app.get("/runs/:id", async (c) => {
    return c.json(redact(await runDetail(store, c.req.param("id"), { staleMs })));
  });

  app.get("/runs/:id/samples", async (c) => {
    const q = parseQuery(c, samplesQuery);
    const page = await store.reads.listOutcomes(c.req.param("id"), q);
    return c.json(
      redact({
        total: page.total,
        limit: q.limit,
        offset: q.offset,
        samples: page.entries.map(({ sample, outcome, ...entry }) => ({
          ...entry,
          input: sample.input,
          target: sample.target ?? null,
          metadata: sample.metadata ?? null,
          outcome: outcome && attemptSummary(outcome),
        })),
      } satisfies SamplePageView),
    );
  });

  app.get("/runs/:id/resultset", async (c) => {
    const run = await requireRun(store, c.req.param("id"));
    // The first pass finds whether there is any result before a byte is sent: a ResultSet needs
    // one, and a run with no finished sample has none to give.
    const coverage = await prepareResultSet(store, run).catch((error: unknown) => {
      if (isStetError(error, "E_INVALID_INPUT"))
        throw new ApiError(409, "no_results", error.message);
      throw error;
    });
    c.header("Content-Type", "application/json");
    // Streamed a page of samples at a time (what `c.json` of the whole document sent, byte for
    // byte), so a large run is never held; a client that leaves stops the reads.
    return stream(
      c,
      async (out) => {
        const write = async (text: string) => {
          if (out.aborted) throw new ClientGone();
          await out.write(text);
        };
        await writeResultSet(store, coverage, write, { style: "compact", redact });
      },
      async (error) => {
        if (!(error instanceof ClientGone))
          deps.log(`ResultSet of ${run.id} cut short: ${redact(error.message)}`);
      },
    );
  });

  app.get("/runs/:id/samples/:sampleId", async (c) => {
    const runId = c.req.param("id");
    const sampleId = c.req.param("sampleId");
    const { entries } = await store.reads.listOutcomes(runId, { sampleId });
    const first = entries[0];
    if (!first) {
      throw new ApiError(404, "sample_not_found", `run ${runId} has no sample "${sampleId}"`);
    }
    const [attempts, scorings, steps] = await Promise.all([
      store.reads.listAttempts(runId, { sampleId }),
      store.reads.listScorings(runId, { sampleId }),
      // Each attempt's step journal (ctx.step / ctx.chat): its trajectory.
      store.journal.list(runId, { sampleId }),
    ]);
    const scoringsOf = (a: { epoch: number; attempt: number }) =>
      scorings
        .filter((s) => s.epoch === a.epoch && s.attempt === a.attempt)
        .map(({ runId: _r, sampleId: _s, epoch: _e, attempt: _a, ...s }) => s);
    // trajectoryStep builds the export's step (Json): its fields are JournalStepView's.
    const journalOf = (a: { epoch: number; attempt: number }) =>
      steps
        .filter((e) => e.epoch === a.epoch && e.attempt === a.attempt)
        .map((e) => trajectoryStep(e) as unknown as JournalStepView);
    return c.json(
      redact({
        sample: first.sample,
        fingerprint: first.fingerprint,
        epochs: entries.map((e) => ({
          epoch: e.epoch,
          status: e.status,
          outcomeAttempt: e.outcome?.attempt ?? null,
        })),
        attempts: attempts.map(({ runId: _runId, ...attempt }) => ({
          ...attempt,
          usage: attempt.usage && trajectoryUsage(attempt.usage),
          // An attempt of an earlier version of the sample: history, not the outcome.
          stale: attempt.fingerprint !== first.fingerprint,
          // Its current scores are its latest scoring's; every one is listed.
          scorings: scoringsOf(attempt),
          journal: journalOf(attempt),
        })),
      } satisfies SampleDetailView),
    );
  });

  return app;
}

/** A streamed response's client went away: the rest is not read. */
class ClientGone extends Error {}
