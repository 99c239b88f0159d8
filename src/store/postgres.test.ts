import pg from "pg";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "../../test/helpers/postgres.js";
import { describeStoreContract } from "./contract.js";
import {
  draft,
  errorDraft,
  newRun,
  owner,
  runConfig,
  sampleRecords,
  scoringOf,
  sleep,
} from "./contract/fixtures.js";
import { migratePostgres } from "./postgres/migrate.js";
import { POSTGRES_MIGRATIONS } from "./migrations/postgres.js";
import { isPostgresUrl, splitSchema } from "../cli/open-store.js";
import { pipelinedTransaction, redactPassword } from "./postgres/driver.js";
import { openPostgresStore } from "./postgres/index.js";
import { requireLeases, type Store } from "./types.js";

describe.skipIf(SKIP_POSTGRES)("postgres", () => {
  describeStoreContract("postgres", async () => {
    const { schema, drop } = testSchema();
    const opened: Store[] = [];
    const connect = async () => {
      const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
      opened.push(store);
      return store;
    };
    return {
      store: await connect(),
      connect,
      cleanup: async () => {
        await Promise.all(opened.map((store) => store.close()));
        await drop();
      },
    };
  });
});

describe.skipIf(SKIP_POSTGRES)("PostgreSQL store", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  function open(schema: string): Store {
    const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
    cleanups.push(() => store.close());
    return store;
  }
  function schema(): string {
    const s = testSchema();
    cleanups.push(s.drop);
    return s.schema;
  }
  /** When the table was last analyzed, by the pool's schema; null: never. */
  async function lastAnalyzed(p: pg.Pool, table: string): Promise<Date | null> {
    const { rows } = await p.query<{ at: Date | null }>(
      `SELECT last_analyze AS at FROM pg_stat_user_tables
       WHERE schemaname = current_schema() AND relname = $1`,
      [table],
    );
    return rows[0]?.at ?? null;
  }
  function pool(name: string): pg.Pool {
    const p = new pg.Pool({
      connectionString: TEST_POSTGRES_URL,
      options: `-c search_path=${name}`,
    });
    cleanups.push(() => p.end());
    return p;
  }

  it("takes the schema from the URL's ?schema= as the CLI's --store does (the option wins)", async () => {
    const inUrl = schema();
    const store = openPostgresStore(`${TEST_POSTGRES_URL}?schema=${inUrl}`);
    cleanups.push(() => store.close());
    await store.reads.listRuns();
    const tables = await pool(inUrl).query(
      "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'runs'",
      [inUrl],
    );
    expect(tables.rowCount).toBe(1);
    expect(store.location).toContain(`(schema ${inUrl})`);
    expect(store.location).not.toContain("?schema=");
    const other = schema();
    const named = openPostgresStore(`${TEST_POSTGRES_URL}?schema=${inUrl}`, { schema: other });
    cleanups.push(() => named.close());
    expect(named.location).toContain(`(schema ${other})`);
  });

  it("numbers its migrations 1, 2, 3… with no gaps or repeats", () => {
    expect(POSTGRES_MIGRATIONS.map((m) => m.version)).toEqual(
      POSTGRES_MIGRATIONS.map((_, i) => i + 1),
    );
  });

  it("creates the schema and migrates once when several connect at once; again is harmless", async () => {
    const name = schema();
    const pools = Array.from({ length: 6 }, () => pool(name));
    const results = await Promise.all(pools.map((p) => migratePostgres(p, { schema: name })));
    const applied = results.flat().filter((r) => r.status === "applied");
    expect(applied.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
    expect(
      (await migratePostgres(pools[0]!, { schema: name })).every(
        (r) => r.status === "already-applied",
      ),
    ).toBe(true);
  });

  it("refuses a schema migrated by a newer stet", async () => {
    const name = schema();
    const p = pool(name);
    await migratePostgres(p, { schema: name });
    await p.query(`INSERT INTO schema_migrations VALUES (999, 'future', '2030-01-01T00:00:00Z')`);
    await expect(open(name).reads.listRuns()).rejects.toMatchObject({
      code: "E_STORE",
      message: expect.stringMatching(/version 999.*newer.*upgrade stet/),
    });
  });

  it("keeps stored attempts immutable even against direct SQL", async () => {
    const name = schema();
    const store = open(name);
    const { owner: o } = await newRun(store, { id: "r1", ids: ["a"] });
    await store.attempts.record("r1", o.token, [draft({ sampleId: "a", epoch: 1 })]);
    const p = pool(name);
    await expect(p.query(`UPDATE attempts SET output = '"x"'`)).rejects.toThrow(/immutable/);
    await expect(p.query(`DELETE FROM attempts`)).rejects.toThrow(/immutable/);
    await store.attempts.recordScorings("r1", o.token, [scoringOf({ sampleId: "a", epoch: 1 })]);
    await expect(p.query(`UPDATE scorings SET scores = '[]'`)).rejects.toThrow(/immutable/);
    await expect(p.query(`DELETE FROM scorings`)).rejects.toThrow(/immutable/);
    expect(await store.reads.listScorings("r1")).toHaveLength(1);
  });

  it("commits an owner's batch in two round trips: the fence and reads, then the writes with COMMIT", async () => {
    const store = open(schema());
    const { run, owner: o } = await newRun(store, { ids: ["a", "b", "c", "d"] });
    const key = (sampleId: string) => ({ sampleId, epoch: 1 });
    await store.attempts.record(run.id, o.token, [draft(key("a"))]);
    const waits = countWaits();
    const stored = await store.attempts.record(
      run.id,
      o.token,
      [draft(key("b")), draft(key("c"))],
      {
        inflight: [key("d")],
      },
    );
    // Each time a connection has no statement left unanswered, it waited a round trip.
    expect(waits()).toBe(2);
    expect(stored.map((a) => [a.sampleId, a.attempt])).toEqual([
      ["b", 1],
      ["c", 1],
    ]);
    expect(await store.runs.listInflight(run.id)).toEqual([key("d")]);
  });

  it("rolls a pipelined transaction back when a deferred statement fails, and throws its error", async () => {
    const name = schema();
    const p = pool(name);
    const table = `"${name}".t`;
    await p.query(`CREATE SCHEMA "${name}"; CREATE TABLE ${table} (id int PRIMARY KEY)`);
    const pipelined = new pg.Pool({ connectionString: TEST_POSTGRES_URL, pipeline: true });
    cleanups.push(() => pipelined.end());
    const failing = pipelinedTransaction(pipelined, async (tx) => {
      await tx.query(`SELECT count(*) FROM ${table}`);
      tx.defer(tx.query(`INSERT INTO ${table} VALUES (1)`));
      tx.defer(tx.query(`INSERT INTO ${table} VALUES (1)`));
      tx.defer(tx.query(`INSERT INTO ${table} VALUES (2)`));
    });
    await expect(failing).rejects.toThrow(/duplicate key/);
    expect((await p.query(`SELECT id FROM ${table}`)).rows).toEqual([]);
    await pipelinedTransaction(pipelined, async (tx) => {
      tx.defer(tx.query(`INSERT INTO ${table} VALUES (3)`));
    });
    // A deferred write sent only after an answer would follow COMMIT: thrown, never sent.
    const late = pipelinedTransaction(pipelined, async (tx) => {
      tx.defer(tx.query("SELECT 1").then(() => tx.query(`INSERT INTO ${table} VALUES (4)`)));
    });
    await expect(late).rejects.toThrow(/after its transaction's COMMIT/);
    expect((await p.query(`SELECT id FROM ${table}`)).rows).toEqual([{ id: 3 }]);
    // A deferred write that throws before sending (a row it cannot encode): rolled back whole,
    // not committed without it.
    const unsendable = pipelinedTransaction(pipelined, async (tx) => {
      await tx.query(`SELECT count(*) FROM ${table}`);
      tx.defer(tx.query(`INSERT INTO ${table} VALUES (5)`));
      tx.defer(
        (async () => {
          throw new Error("cannot encode the row");
        })(),
      );
    });
    await expect(unsendable).rejects.toThrow(/cannot encode the row/);
    expect((await p.query(`SELECT id FROM ${table}`)).rows).toEqual([{ id: 3 }]);
  });

  it("lets exactly one of eight connections racing for a dead owner's run claim it", async () => {
    const name = schema();
    const { owner: dead } = await newRun(open(name), { id: "race" });
    const racers = Array.from({ length: 8 }, () => open(name));
    const owners = racers.map((_, i) => owner(`racer${i}`));
    const wins = await Promise.all(
      racers.map((s, i) => s.runs.claim("race", owners[i]!, dead.token)),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    const winner = owners[wins.indexOf(true)]!;
    expect((await racers[0]!.runs.get("race"))?.owner?.token).toBe(winner.token);
  });

  it("gives up a claim on a row another session keeps locked, after lock_timeout, saying why", async () => {
    const name = schema();
    const { owner: dead } = await newRun(open(name), { id: "locked" });
    const holder = pool(name);
    const tx = await holder.connect();
    cleanups.push(async () => tx.release());
    await tx.query("BEGIN");
    await tx.query("SELECT 1 FROM runs WHERE id = 'locked' FOR UPDATE");
    const store = openPostgresStore(TEST_POSTGRES_URL, {
      schema: name,
      idleInTransactionTimeoutMs: 1_000,
      lockTimeoutMs: 300,
    });
    cleanups.push(() => store.close());
    await expect(store.runs.claim("locked", owner("taker"), dead.token)).rejects.toMatchObject({
      code: "E_STORE",
      message: expect.stringMatching(
        /another session held a lock this statement needs for over 0\.3s \(lock_timeout\).*ended after 1s idle in a transaction/,
      ),
    });
    await tx.query("ROLLBACK");
    expect(await store.runs.claim("locked", owner("taker"), dead.token)).toBe(true);
  });

  it("creates a run from pages whose source pauses longer than the idle-in-transaction limit", async () => {
    // A slow `sample` mapper between two pages: no transaction may stay open across the wait,
    // or the server ends the session (idle_in_transaction_session_timeout) and the creation fails.
    const store = openPostgresStore(TEST_POSTGRES_URL, {
      schema: schema(),
      idleInTransactionTimeoutMs: 300,
    });
    cleanups.push(() => store.close());
    const records = sampleRecords(Array.from({ length: 30 }, (_, i) => `s${i}`));
    async function* slowPages() {
      yield records.slice(0, 20);
      await sleep(1_000);
      yield records.slice(20);
    }
    const run = await store.runs.create({
      id: "slow",
      config: runConfig(),
      samples: slowPages(),
      owner: owner(),
    });
    expect(run.sampleCount).toBe(30);
    const stored = await store.reads.getSamples("slow");
    expect(stored).toHaveLength(30);
    expect(stored).toEqual(expect.arrayContaining(records));
  });

  it("refreshes the samples' planner statistics after a large paged snapshot, so its keyset pages read by the primary key", async () => {
    const name = schema();
    const store = open(name);
    const records = sampleRecords(Array.from({ length: 12_000 }, (_, i) => `s${i}`));
    async function* pages() {
      for (let at = 0; at < records.length; at += 5_000) yield records.slice(at, at + 5_000);
    }
    await store.runs.create({ id: "big", config: runConfig(), samples: pages(), owner: owner() });
    const p = pool(name);
    const analyzed = await p.query<{ n: string }>(
      `SELECT n_live_tup AS n FROM pg_stat_user_tables
       WHERE schemaname = current_schema() AND relname = 'samples' AND last_analyze IS NOT NULL`,
    );
    expect(analyzed.rows).toHaveLength(1);
    // The keyset page of the snapshot walks the primary key instead of sorting every sample.
    const plan = await p.query<{ "QUERY PLAN": string }>(
      `EXPLAIN SELECT sample_id, sample, fingerprint FROM samples
       WHERE run_id = 'big' AND sample_id > 's1' ORDER BY sample_id LIMIT 512`,
    );
    expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).not.toMatch(/Sort/);
  });

  it("refreshes the attempts' planner statistics before a paged read of a large run they undercount, and not for a small one", async () => {
    const name = schema();
    const store = open(name);
    const p = pool(name);
    const analyzed = () => lastAnalyzed(p, "attempts");
    const headsOf = async (runId: string) => {
      let n = 0;
      for await (const page of store.reads.attemptHeadPages(runId, 500)) n += page.length;
      return n;
    };
    const pagePlan = async () =>
      (
        await p.query<{ "QUERY PLAN": string }>(
          `EXPLAIN SELECT seq, sample_id, epoch, attempt, status FROM attempts_now
           WHERE run_id = 'big' AND (sample_id, epoch, attempt) > ('s1', 0, 0) AND seq <= 1000000
           ORDER BY sample_id, epoch, attempt LIMIT 500`,
        )
      ).rows
        .map((r) => r["QUERY PLAN"])
        .join("\n");
    const small = await newRun(store, { id: "small", ids: ["a", "b", "c"] });
    await store.attempts.record("small", small.owner.token, [
      draft({ sampleId: "a", epoch: 1 }),
      draft({ sampleId: "b", epoch: 1 }),
    ]);
    expect(await headsOf("small")).toBe(2);
    expect(await analyzed()).toBeNull();

    const ids = Array.from({ length: 12_000 }, (_, i) => `s${i}`);
    const { owner: o } = await newRun(store, { id: "big", ids });
    // Committed by stores that each commit fewer than the 2,000 after which a store looks at the
    // statistics itself (see the next test): as by several processes.
    for (let at = 0; at < ids.length; at += 1_500) {
      const drafts = ids.slice(at, at + 1_500).map((sampleId) => draft({ sampleId, epoch: 1 }));
      await open(name).attempts.record("big", o.token, drafts);
    }
    // As committed: a page is planned as a sort of every attempt of the run.
    const sortsAttempts = /Sort Key: a\.sample_id/;
    expect(await analyzed()).toBeNull();
    expect(await pagePlan()).toMatch(sortsAttempts);
    expect(await headsOf("big")).toBe(12_000);
    expect(await analyzed()).not.toBeNull();
    const plan = await pagePlan();
    expect(plan).not.toMatch(sortsAttempts);
    expect(plan).toMatch(/Index Scan using attempts_pkey/);
  });

  it("analyzes the attempts once a process has committed 2,000 of a run on a table analyzed when nearly empty", async () => {
    const name = schema();
    const store = open(name);
    const p = pool(name);
    const analyzed = () => lastAnalyzed(p, "attempts");
    const ids = Array.from({ length: 2_500 }, (_, i) => `s${i}`);
    const { owner: o } = await newRun(store, { id: "r", ids });
    const commit = (from: number, to: number) =>
      store.attempts.record(
        "r",
        o.token,
        ids.slice(from, to).map((sampleId) => draft({ sampleId, epoch: 1 })),
      );
    await commit(0, 1_000);
    await commit(1_000, 1_999);
    expect(await analyzed()).toBeNull();
    await commit(1_999, 2_000);
    expect(await analyzed()).not.toBeNull();
    const { rows } = await p.query<{ n: number }>(
      `SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'attempts'::regclass`,
    );
    expect(rows[0]!.n).toBe(2_000);
  });

  it("extends a worker's leases without waiting on those a commit of its holds locked", async () => {
    const name = schema();
    const store = open(name);
    const ids = ["a", "b", "c"];
    const run = await store.runs.create({
      id: "d",
      config: runConfig({ distributed: true, epochs: 1 }),
      samples: sampleRecords(ids),
      owner: owner("creator"),
    });
    await store.runs.release("d", run.owner!.token, "interrupted");
    const leases = requireLeases(store);
    await leases.reopen("d");
    const worker = { ...owner("w"), concurrency: 4, leaseMs: 30_000 };
    await leases.register("d", worker);
    expect((await leases.claim("d", worker.token, 3)).keys).toHaveLength(3);
    // A commit of the worker's, mid-transaction, holding one lease row locked (as its fence does).
    const holder = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query(`SET search_path = ${name}`);
    await holder.query("BEGIN");
    await holder.query("SELECT 1 FROM leases WHERE run_id = 'd' AND sample_id = 'b' FOR UPDATE");
    const expiresAt = async () =>
      (
        await pool(name).query<{ sample_id: string; expires_at: number }>(
          "SELECT sample_id, expires_at FROM leases WHERE run_id = 'd' ORDER BY sample_id",
        )
      ).rows;
    const before = await expiresAt();
    await sleep(5);
    // The beat answers while the row is still locked: it skips it instead of waiting on it.
    const beat = store.runs.heartbeat("d", worker.token);
    const answered = await Promise.race([beat.then(() => true), sleep(20_000).then(() => false)]);
    await holder.query("COMMIT");
    expect(answered).toBe(true);
    expect(await beat).toMatchObject({ owned: true });
    const after = await expiresAt();
    expect(after[0]!.expires_at).toBeGreaterThan(before[0]!.expires_at);
    expect(after[1]!.expires_at).toBe(before[1]!.expires_at);
    expect(after[2]!.expires_at).toBeGreaterThan(before[2]!.expires_at);
  });

  it("a worker's settle of an errored key does not wait on the run's row, which a commit takes last", async () => {
    // A commit of a worker locks its keys' leases, then its own worker row (`finish`), then the
    // run's row; a settle took the run's row first (its fence), then the worker row: each waited
    // on the other (PostgreSQL ended one as a deadlock, and a settle so refused left its lease
    // open for good: the worker waited on it). The settle is fenced by the key's lease alone now.
    const name = schema();
    const store = open(name);
    const run = await store.runs.create({
      id: "d",
      config: runConfig({ distributed: true, epochs: 1 }),
      samples: sampleRecords(["a", "b"]),
      owner: owner("creator"),
    });
    await store.runs.release("d", run.owner!.token, "interrupted");
    const leases = requireLeases(store);
    await leases.reopen("d");
    const worker = { ...owner("w"), concurrency: 2, leaseMs: 30_000 };
    await leases.register("d", worker);
    expect((await leases.claim("d", worker.token, 2)).keys).toHaveLength(2);
    await store.attempts.record("d", worker.token, [errorDraft({ sampleId: "a", epoch: 1 })]);
    // Another commit, mid-transaction, holding the run's row (as a commit does at its end).
    const holder = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query(`SET search_path = ${name}`);
    await holder.query("BEGIN");
    await holder.query("SELECT 1 FROM runs WHERE id = 'd' FOR NO KEY UPDATE");
    const settle = leases.settle("d", worker.token, [{ sampleId: "a", epoch: 1 }]);
    const answered = await Promise.race([settle.then(() => true), sleep(20_000).then(() => false)]);
    await holder.query("COMMIT");
    expect(answered).toBe(true);
    await settle;
    const { rows } = await pool(name).query<{ sample_id: string; done: number }>(
      "SELECT sample_id, done FROM leases WHERE run_id = 'd' ORDER BY sample_id",
    );
    expect(rows).toEqual([
      { sample_id: "a", done: 1 },
      { sample_id: "b", done: 0 },
    ]);
  });

  it("stores JSON as text, so an attempt reads back byte for byte", async () => {
    const name = schema();
    const store = open(name);
    const { owner: o } = await newRun(store, { id: "r1", ids: ["a"] });
    // Key order and spacing that jsonb would normalise away.
    const output = { z: 1, a: [1, 2, { y: "é", b: null }] };
    await store.attempts.record("r1", o.token, [draft({ sampleId: "a", epoch: 1 }, { output })]);
    const p = pool(name);
    const { rows } = await p.query<{ output: string }>(`SELECT output FROM attempts`);
    expect(rows[0]!.output).toBe(JSON.stringify(output));
    expect((await store.reads.listAttempts("r1"))[0]!.output).toEqual(output);
  });

  it("orders sample ids by their bytes, whatever the database's locale", async () => {
    const store = open(schema());
    const ids = ["b", "B", "a", "A", "_", "a-1", "a_1", "é"];
    await newRun(store, { id: "r1", ids });
    const listed = (await store.reads.listSampleFingerprints("r1")).map((e) => e.sampleId);
    expect(listed).toEqual([...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
  });

  it("fails with E_STORE naming the database, without its password, when it cannot connect", async () => {
    const store = openPostgresStore("postgres://stet:s3cret@127.0.0.1:1/none");
    cleanups.push(() => store.close());
    const failure = store.reads.listRuns();
    await expect(failure).rejects.toMatchObject({ code: "E_STORE" });
    const message = await failure.catch((e: Error) => e.message);
    expect(message).toContain("postgres://stet:***@127.0.0.1:1/none");
    expect(message).not.toContain("s3cret");
  });

  it("refuses a schema name it could not use as given", () => {
    for (const schema of ["Stet", "stet-x", "1stet", "a;drop"]) {
      expect(() => openPostgresStore(TEST_POSTGRES_URL, { schema })).toThrow(
        expect.objectContaining({ code: "E_CONFIG" }),
      );
    }
  });

  it("recognises and redacts connection URLs", () => {
    expect(isPostgresUrl("postgres://db/x")).toBe(true);
    expect(isPostgresUrl("postgresql://db/x")).toBe(true);
    expect(isPostgresUrl("./postgres.db")).toBe(false);
    expect(redactPassword("postgres://u:secret@db:5432/x")).toBe("postgres://u:***@db:5432/x");
    expect(redactPassword("postgres://db/x")).toBe("postgres://db/x");
    expect(redactPassword("postgres://u@db/x?password=secret&sslmode=require")).toBe(
      "postgres://u@db/x?password=***&sslmode=require",
    );
    expect(splitSchema("postgres://db/x?schema=stet&sslmode=require")).toEqual({
      url: "postgres://db/x?sslmode=require",
      schema: "stet",
    });
    expect(splitSchema("postgres://db/x")).toEqual({ url: "postgres://db/x" });
  });
});

/**
 * Counts, from now to the end of the test, the times a connection saw the answer to every
 * statement it had sent inside a transaction (BEGIN to COMMIT): its round trips.
 */
function countWaits(): () => number {
  const query = pg.Client.prototype.query;
  const inTransaction = new Set<pg.Client>();
  const pending = new Map<pg.Client, number>();
  let waits = 0;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const answer = (query as (...a: unknown[]) => unknown).apply(this, args);
    const config = args[0] as { text?: string } | string | undefined;
    const text = typeof config === "string" ? config : (config?.text ?? "");
    if (text === "BEGIN") inTransaction.add(this);
    if (inTransaction.has(this) && answer instanceof Promise) {
      if (text === "COMMIT" || text === "ROLLBACK") inTransaction.delete(this);
      pending.set(this, (pending.get(this) ?? 0) + 1);
      const settled = () => {
        const left = pending.get(this)! - 1;
        pending.set(this, left);
        if (left === 0) waits++;
      };
      answer.then(settled, settled);
    }
    return answer;
  } as typeof query;
  onTestFinished(() => {
    pg.Client.prototype.query = query;
  });
  return () => waits;
}
