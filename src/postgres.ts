/**
 * stet's PostgreSQL store: a subpath of its own (`stet/postgres`), so that `import "stet"` never
 * loads the driver.
 */
export { openPostgresStore } from "./store/postgres/index.js";
export type { PostgresStoreOptions } from "./store/postgres/index.js";
