// The largest self times of a V8 CPU profile (a .cpuprofile from `node --cpu-prof` or
// bench/cpu-probe.mjs), by function (placed in its source through dist/'s source maps) and by
// source file, and per sample when told how many samples the profile ran.
//   node bench/profile-top.mjs <file.cpuprofile> [samples] [top=15]
// The profiler samples the main thread's wall time while it is not idle: a synchronous fsync
// (SQLite's commit, `exec`) or time the thread was descheduled counts, so the total exceeds the
// thread's CPU time (bench/cpu-probe.mjs measures that); read the shares, not the sum.
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { fileURLToPath } from "node:url";

const [file, samplesText, topText] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, "utf8"));
const samples = Number(samplesText ?? 0);
const top = Number(topText ?? 15);

const maps = new Map();
/** A bundled frame's source file and line, through the chunk's source map when there is one. */
function origin({ url, lineNumber, columnNumber }) {
  if (!url.startsWith("file:")) return { source: url, line: lineNumber + 1 };
  if (!maps.has(url)) {
    const path = `${fileURLToPath(url)}.map`;
    maps.set(url, existsSync(path) ? new SourceMap(JSON.parse(readFileSync(path, "utf8"))) : null);
  }
  const entry = maps.get(url)?.findEntry(lineNumber, columnNumber);
  if (!entry?.originalSource) return { source: url, line: lineNumber + 1 };
  return { source: entry.originalSource, line: entry.originalLine + 1 };
}
const short = (source) =>
  source.replace(/^.*\/node_modules\//, "").replace(/^.*\/(src|dist)\//, "$1/");

const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const byFunction = new Map();
const byFile = new Map();
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
for (let i = 0; i < profile.samples.length; i++) {
  const { callFrame } = nodes.get(profile.samples[i]);
  const us = profile.timeDeltas[i] ?? 0;
  const name = callFrame.functionName || "(anonymous)";
  if (callFrame.url === "") {
    add(byFunction, name, us);
    add(byFile, name.startsWith("(") ? name : "(native)", us);
    continue;
  }
  const { source, line } = origin(callFrame);
  add(byFunction, `${name} ${short(source)}:${line}`, us);
  add(byFile, short(source), us);
}
const total = [...byFunction.values()].reduce((a, b) => a + b, 0);
const busy = total - (byFunction.get("(idle)") ?? 0);
const perSample = (us) =>
  samples > 0 ? `  ${(us / samples).toFixed(1).padStart(6)} µs/sample` : "";
console.log(
  `${file}: ${(busy / 1000).toFixed(0)} ms busy of ${(total / 1000).toFixed(0)} ms${perSample(busy)}`,
);
for (const [title, map] of [
  ["self time by function", byFunction],
  ["by source file", byFile],
]) {
  console.log(`\n${title}:`);
  const rows = [...map].filter(([k]) => k !== "(idle)").sort((a, b) => b[1] - a[1]);
  for (const [key, us] of rows.slice(0, top)) {
    const share = ((100 * us) / busy).toFixed(1).padStart(5);
    console.log(`${(us / 1000).toFixed(1).padStart(8)} ms ${share} %${perSample(us)}  ${key}`);
  }
}
