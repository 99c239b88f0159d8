import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { fileURLToPath } from "node:url";
import { startCli, type CliProcess } from "./cli.js";

/** A `stet serve` child process and the URL it printed. */
export interface ServeProcess {
  url: string;
  proc: CliProcess;
  pid: number;
  /** fetch() relative to the server's URL. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  post(path: string, body?: unknown): Promise<Response>;
}

/**
 * Spawns `stet serve --port 0 <args>` (the built CLI) and resolves once it printed its URL.
 *
 * @example const a = await startServe(["--store", db, "--evals", dir], { MOCK_URL: mock.url });
 */
export async function startServe(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<ServeProcess> {
  const proc = startCli(["serve", "--port", "0", ...args], { env });
  const [, url] = await proc.waitFor(/listening on (http:\/\/\S+)/, 20_000);
  const base = url!.replace("0.0.0.0", "127.0.0.1");
  const request = (path: string, init?: RequestInit) => fetch(`${base}${path}`, init);
  return {
    url: base,
    proc,
    pid: proc.child.pid!,
    fetch: request,
    post: (path, body) =>
      request(path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
  };
}

/** dist/index.js, which eval files written by tests import as "stet". */
export const STET_DIST = pathToFileURL(
  fileURLToPath(new URL("../../dist/index.js", import.meta.url)),
).href;

/**
 * Writes `chat-eval.mjs` into `dir`: `n` samples answered by the chat solver at $MOCK_URL, each
 * request tagged with the header `x-server: $SERVER_NAME` so a test can tell which process sent it.
 */
export function writeChatEval(dir: string, n: number, concurrency = 2): string {
  const file = join(dir, "chat-eval.mjs");
  writeFileSync(
    file,
    `import { defineEval, scorers, solvers } from ${JSON.stringify(STET_DIST)};
export default defineEval({
  name: "chat-eval",
  dataset: Array.from({ length: ${n} }, (_, i) => ({ id: "s" + String(i).padStart(2, "0"), input: "s" + String(i).padStart(2, "0"), target: "s" + String(i).padStart(2, "0") })),
  solver: solvers.chat({
    model: "gpt-test",
    baseURL: process.env.MOCK_URL,
    maxRetries: 0,
    headers: { "x-server": process.env.SERVER_NAME ?? "?" },
  }),
  scorers: [scorers.exact()],
  concurrency: ${concurrency},
});
`,
  );
  return file;
}
