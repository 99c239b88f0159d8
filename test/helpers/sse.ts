/** One parsed server-sent event. */
export interface SseEvent {
  event: string;
  // Tests assert on the shape with toMatchObject.
  data: Record<string, unknown>;
  /** The raw text of the event, for "no secret anywhere" checks. */
  raw: string;
}

/**
 * Reads a `text/event-stream` response event by event until it ends (or the caller stops).
 *
 * @example for await (const e of readSse(res)) if (e.event === "completed") break;
 */
export async function* readSse(res: Response): AsyncGenerator<SseEvent> {
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
        const data = block
          .split("\n")
          .filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6))
          .join("\n");
        yield {
          event,
          data: data ? (JSON.parse(data) as Record<string, unknown>) : {},
          raw: block,
        };
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Every event of a stream, until it ends or `until` matches (that event included). */
export async function collectSse(
  res: Response,
  until?: (event: SseEvent) => boolean,
): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readSse(res)) {
    events.push(event);
    if (until?.(event)) break;
  }
  return events;
}

/** Reads a stream until `count` events named `event` arrived; the rest stays readable. */
export async function readUntil(stream: AsyncGenerator<SseEvent>, event: string, count = 1) {
  const seen: SseEvent[] = [];
  let n = 0;
  for (;;) {
    const next = await stream.next();
    if (next.done) throw new Error(`stream ended before ${count} ${event} event(s)`);
    seen.push(next.value);
    if (next.value.event === event && ++n === count) return seen;
  }
}
