// What the probes (cpu-probe.mjs, commit-probe.mjs) measure around the work they time: the wall,
// the main thread's CPU (/proc/thread-self/schedstat: nanoseconds on a CPU) and the whole
// process's (process.cpuUsage); with a profile path, the work is also profiled (V8's sampling
// profiler through node:inspector, every 200 µs), which inflates the figures.
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

const threadCpuNs = () => Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]);

/**
 * Runs `work` measured, and profiled to `profilePath` when one is given.
 *
 * @example const { result, wallMs, threadUs, cpu } = await measureWork(() => runEval(options));
 */
export async function measureWork(work, profilePath) {
  let session;
  if (profilePath) {
    session = new Session();
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 200 });
    await session.post("Profiler.start");
  }
  const cpu0 = process.cpuUsage();
  const thread0 = threadCpuNs();
  const t0 = performance.now();
  const result = await work();
  const wallMs = performance.now() - t0;
  const threadUs = (threadCpuNs() - thread0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (session) {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(profilePath, JSON.stringify(profile));
    session.disconnect();
  }
  return { result, wallMs, threadUs, cpu };
}
