/** One numbered schema step of an adapter; shipped steps are never edited. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export interface MigrationResult {
  version: number;
  name: string;
  status: "applied" | "already-applied";
}
