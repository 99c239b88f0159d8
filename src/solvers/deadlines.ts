/** A pending deadline; `cancel` it once its request is answered. */
export interface Deadline {
  cancel(): void;
}

interface Entry {
  at: number;
  fire: (() => void) | undefined;
}

/**
 * The deadlines of one duration on one timer. Deadlines of the same duration end in the order
 * they began (a monotonic clock), so they are a queue whose head holds the timer; a request's
 * 300 s timeout is a queue entry, not a timer of its own made and cleared per request. The timer
 * fires at or after the head's deadline, never before: the semantics of a `setTimeout` per
 * deadline. It is unref'd (the request it guards holds the process) and cleared when no deadline
 * is pending.
 */
class DeadlineQueue {
  #entries: Entry[] = [];
  #head = 0;
  #live = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly ms: number,
    private readonly onEmpty: () => void,
  ) {}

  add(fire: () => void): Deadline {
    const entry: Entry = { at: performance.now() + this.ms, fire };
    this.#entries.push(entry);
    this.#live++;
    if (this.#timer === undefined) this.#arm(entry.at);
    return { cancel: () => this.#cancel(entry) };
  }

  #cancel(entry: Entry): void {
    if (entry.fire === undefined) return;
    entry.fire = undefined;
    this.#live--;
    if (this.#live === 0) return this.#reset();
    // Answered requests at the head go at once; those behind a slow one wait for it, and are
    // swept out when they outnumber the pending ones.
    const entries = this.#entries;
    while (this.#head < entries.length && entries[this.#head]!.fire === undefined) this.#head++;
    if (entries.length - this.#head > 2 * this.#live + 1024) {
      this.#entries = entries.slice(this.#head).filter((e) => e.fire !== undefined);
      this.#head = 0;
    }
  }

  #expire = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    const entries = this.#entries;
    while (this.#head < entries.length) {
      const entry = entries[this.#head]!;
      if (entry.fire !== undefined && entry.at > now) break;
      this.#head++;
      const fire = entry.fire;
      if (fire === undefined) continue;
      entry.fire = undefined;
      this.#live--;
      fire();
    }
    if (this.#live === 0) this.#reset();
    else if (this.#timer === undefined) this.#arm(entries[this.#head]!.at);
  };

  #arm(at: number): void {
    this.#timer = setTimeout(this.#expire, Math.max(1, Math.ceil(at - performance.now())));
    this.#timer.unref?.();
  }

  #reset(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#entries = [];
    this.#head = 0;
    this.onEmpty();
  }
}

/** The process's deadline queues by duration; a queue goes when nothing of it is pending. */
const queues = new Map<number, DeadlineQueue>();

/**
 * Calls `fire` once `ms` milliseconds from now (never sooner), unless cancelled first.
 *
 * @example
 * const timeout = deadline(300_000, () => request.destroy());
 * try { await response; } finally { timeout.cancel(); }
 */
export function deadline(ms: number, fire: () => void): Deadline {
  let queue = queues.get(ms);
  if (queue === undefined) {
    const made = new DeadlineQueue(ms, () => queues.delete(ms));
    queues.set(ms, made);
    queue = made;
  }
  return queue.add(fire);
}
