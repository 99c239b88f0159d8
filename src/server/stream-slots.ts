import { ApiError } from "./api-error.js";

/** How many event streams one server keeps open at once by default. */
export const DEFAULT_MAX_STREAMS = 100;

/**
 * The count of open event streams (follows, and the streams of starts and resumes), capped so
 * that many subscribers cannot grow memory and poll loops without bound. A stream takes a slot
 * before it starts anything and gives it back when it ends, which it does when its client goes
 * away.
 *
 * @example
 * const release = slots.take(); // 503 too_many_streams at the cap, before anything starts
 * return sseResponse(c, source, { redact, onEnd: release });
 */
export class StreamSlots {
  #open = 0;

  constructor(readonly limit = DEFAULT_MAX_STREAMS) {}

  /** Streams open right now. */
  get open(): number {
    return this.#open;
  }

  /** Takes a slot, or throws 503 `too_many_streams`; the release it returns is idempotent. */
  take(): () => void {
    if (this.#open >= this.limit) {
      throw new ApiError(
        503,
        "too_many_streams",
        `this server already has ${this.limit} event streams open; try again when one has ended`,
      );
    }
    this.#open++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#open--;
    };
  }
}
