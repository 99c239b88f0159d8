// The sandbox group: what a bubblewrap sandbox costs per execution, and how soon a runaway program returns.
import { createSandbox } from "../stet.mjs";
import { median, quick, report, reps, spread } from "../harness.mjs";

/**
 * Sandboxed executions per second of a trivial program (`/usr/bin/true`): the overhead of one
 * bubblewrap sandbox (namespaces, mounts, prlimit) per execution, sequentially and with one
 * execution per core at once; skipped when bwrap is missing.
 */
export default async function sandbox() {
  const box = createSandbox({ kind: "bubblewrap" });
  try {
    await box.check();
  } catch (error) {
    console.log(`- sandbox: skipped (${error.message.split(". ")[0]})`);
    return;
  }
  const { availableParallelism } = await import("node:os");
  const n = quick ? 50 : 200;
  for (const concurrency of [1, availableParallelism()]) {
    const rates = [];
    for (let r = 0; r < reps; r++) {
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < n) {
            const result = await box.exec({ command: ["/usr/bin/true"] });
            if (result.exitCode !== 0) throw new Error(`sandboxed true failed: ${result.stderr}`);
          }
        }),
      );
      rates.push((n / (performance.now() - started)) * 1000);
    }
    report(
      `sandboxed executions of /usr/bin/true (bubblewrap), concurrency ${concurrency}`,
      `${spread(rates, (x) => `${Math.round(x)}/s`)} = ${(1000 / median(rates)).toFixed(1)} ms each`,
      "—",
      true,
    );
  }
  const python = [];
  for (let r = 0; r < Math.min(reps, 3); r++) {
    const started = performance.now();
    await box.exec({ command: ["python3", "-c", "pass"] });
    python.push(performance.now() - started);
  }
  report(
    "one sandboxed `python3 -c pass`",
    spread(python, (x) => `${Math.round(x)} ms`),
    "—",
    true,
  );

  // How soon an execution returns when its program will not: spinning for ever (killed at its
  // 1.5 s wall-time limit), and exiting while daemons it started sleep on with its stdout.
  const lasting = async (command, stdin, timeoutMs) => {
    const figures = [];
    for (let r = 0; r < Math.min(reps, 3); r++) {
      const started = performance.now();
      await box.exec({ command, ...(stdin ? { stdin } : {}), limits: { timeoutMs } });
      figures.push(performance.now() - started);
    }
    return figures;
  };
  const spinning = await lasting(["python3", "-c", "while True: pass"], undefined, 1_500);
  report(
    "a sandboxed program spinning for ever, wall-time limit 1.5 s: the execution returns after",
    spread(spinning),
    "≤ 2.50 s",
    median(spinning) <= 2_500,
  );
  const daemons = await lasting(
    ["python3", "-"],
    "import subprocess, sys\n" +
      'subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)\n',
    60_000,
  );
  report(
    "a sandboxed program that exits leaving a daemon asleep on its stdout: the execution returns after",
    spread(daemons),
    "≤ 1.00 s",
    median(daemons) <= 1_000,
  );
}
