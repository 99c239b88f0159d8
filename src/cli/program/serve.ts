import type { Command } from "commander";
import { bounded } from "../flag-values.js";
import { storeOption, loadTimeoutOption } from "./options.js";

/** `stet serve`'s port when `--port` is not given. */
const DEFAULT_PORT = 7477;

/** Declares `stet serve` on the program; its action loads `commands/serve.ts` when it runs. */
export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("HTTP API over the store: list, start, resume, cancel and follow runs")
    .option(
      "--port <n>",
      `port to listen on, 0 for any free one (default ${DEFAULT_PORT})`,
      bounded("port"),
    )
    .option(
      "--host <host>",
      "address to bind; beyond loopback needs STET_TOKEN (32+ characters)",
      "127.0.0.1",
    )
    .option("--evals <dir>", "directory of eval files and suites that POST /api/runs may start")
    .option(
      "--allowed-host <host>",
      "another Host name to answer to (name or name:port; repeatable; also $STET_ALLOWED_HOSTS)",
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option("--max-body <bytes>", "largest request body (default 1048576)", bounded("maxBodyBytes"))
    .option("--max-streams <n>", "event streams open at once (default 100)", bounded("maxStreams"))
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .action(async (flags) => {
      process.exitCode = await (
        await import("../commands/serve.js")
      ).serveCommand({ ...flags, port: flags.port ?? DEFAULT_PORT });
    });
}
