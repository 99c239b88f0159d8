import type { Context } from "hono";
import { streamSSE } from "hono/streaming";

/** One server-sent event: its name and a JSON payload. */
export interface SseMessage {
  event: string;
  data: unknown;
}

export interface SseOptions {
  /** Applied to every payload before it is written. */
  redact: <T>(value: T) => T;
  /** Called once if the client goes away before the source ends. */
  onAbort?: () => void;
  /** Called once when the stream has ended, however it ended (gives back its StreamSlots slot). */
  onEnd?: () => void;
  log?: (line: string) => void;
}

/**
 * Answers with an SSE stream of `source`. The source keeps its own life: a client that
 * disconnects stops the writing (and calls `onAbort`), never what produces the events.
 *
 * @example return sseResponse(c, messages(queue), { redact, onAbort: unsubscribe });
 */
export function sseResponse(
  c: Context,
  source: AsyncIterable<SseMessage>,
  options: SseOptions,
): Response {
  return streamSSE(c, async (stream) => {
    let aborted = false;
    stream.onAbort(() => {
      aborted = true;
      options.onAbort?.();
    });
    try {
      for await (const message of source) {
        if (aborted) break;
        await stream.writeSSE({
          event: message.event,
          data: JSON.stringify(options.redact(message.data)),
        });
      }
    } catch (error) {
      options.log?.(`event stream failed: ${error instanceof Error ? error.message : error}`);
    } finally {
      options.onEnd?.();
    }
  });
}
