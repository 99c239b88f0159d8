// One reader thread of a parallel `stet export` (`parallel-export.ts`): it opens the store as the
// command did and, for each part of the run it is given, reads that part's outcomes a page at a
// time and sends each page's text back, then says the part is done. Nothing here writes: the
// command's thread writes the parts in order. (Text, not UTF-8 bytes moved across: the command's
// thread allocates too little for its collector to free moved buffers soon, and they piled up.)
import { on } from "node:events";
import { parentPort, workerData } from "node:worker_threads";
import { isStetError, thrownMessage } from "../core/errors.js";
import { rowTexts } from "./export-rows.js";
import type { ExportWorkerData, FromWorker, ToWorker } from "./parallel-export.js";
import { openStore } from "./open-store.js";

const port = parentPort!;
const data = workerData as ExportWorkerData;
const send = (message: FromWorker) => port.postMessage(message);

try {
  const store = await openStore(data.store, { create: false });
  try {
    for await (const [message] of on(port, "message") as AsyncIterable<[ToWorker]>) {
      if (message.end) break;
      const { index, part } = message;
      for await (const text of rowTexts(store, data.runId, data.format, part)) {
        send({ index, text });
      }
      send({ index, done: true });
    }
  } finally {
    await store.close();
  }
} catch (error) {
  send({
    failed: isStetError(error)
      ? { code: error.code, message: error.message, details: error.details }
      : { message: thrownMessage(error) },
  });
} finally {
  port.close();
}
