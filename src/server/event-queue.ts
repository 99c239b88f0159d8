/**
 * An unbounded queue read with `for await`: a synchronous producer (the engine's `onEvent`) and
 * an asynchronous consumer (an SSE stream) that may start later or write slower. Nothing pushed
 * before `close()` is lost; iteration ends after the last item once closed.
 *
 * @example
 * const queue = new EventQueue<string>();
 * queue.push("a"); queue.close();
 * for await (const item of queue) console.log(item); // "a"
 */
export class EventQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #closed = false;
  #wake: (() => void) | null = null;

  get closed(): boolean {
    return this.#closed;
  }

  push(item: T): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#notify();
  }

  close(): void {
    this.#closed = true;
    this.#notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}
