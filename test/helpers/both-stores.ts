import { afterEach } from "vitest";
import { openPostgresStore } from "../../src/store/postgres/index.js";
import type { Store } from "../../src/store/types.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./postgres.js";
import { tempStore } from "./temp-store.js";

/** One row of `bothStores`: the store's name, a factory of fresh stores, whether to skip it. */
export type StoreRow = readonly [
  name: "sqlite" | "postgres",
  open: () => Promise<Store>,
  skip: boolean,
];

/**
 * The two stores a test runs against, as rows for `describe.each`: each `open()` makes a fresh
 * store (a SQLite file in a temp folder, a PostgreSQL schema of its own) that is closed and
 * removed (the folder deleted, the schema dropped) after its test. PostgreSQL's row is skipped
 * under STET_SKIP_POSTGRES. Call it once at the top of a test file.
 *
 * @example describe.each(bothStores())("… (%s)", (_name, open, skip) => { it.skipIf(skip)("…", async () => { const store = await open(); }); });
 */
export function bothStores(): StoreRow[] {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  const sqlite = async (): Promise<Store> => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    return t.store;
  };
  const postgres = async (): Promise<Store> => {
    const { schema, drop } = testSchema();
    const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
    cleanups.push(drop, () => store.close());
    return store;
  };
  return [
    ["sqlite", sqlite, false],
    ["postgres", postgres, SKIP_POSTGRES],
  ];
}
