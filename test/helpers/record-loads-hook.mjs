// Runs on Node's loader thread: records each module as it loads, then loads it as usual.
import { appendFileSync } from "node:fs";

export async function load(url, context, nextLoad) {
  appendFileSync(process.env.STET_TEST_LOAD_LOG, `${url}\n`);
  return nextLoad(url, context);
}
