/**
 * The clock of an attempt's time limits: `pause` while the attempt waits on something that is
 * not its own work (a provider batch, which may take hours), `resume` after. Pauses nest.
 */
export interface TimeoutClock {
  pause(): void;
  resume(): void;
}

/**
 * A one-shot timer whose time runs only while it is not paused: `fire` is called once `ms` of
 * unpaused time have passed, unless it was cleared first.
 *
 * @example const timer = new PausableTimer(400, () => controller.abort()); timer.pause(); timer.resume();
 */
export class PausableTimer implements TimeoutClock {
  /** Milliseconds spent paused so far (a pause still going on not included). */
  pausedMs = 0;
  #left: number;
  #since = performance.now();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #paused = 0;
  #done = false;
  readonly #fire: () => void;

  constructor(ms: number, fire: () => void) {
    this.#left = ms;
    this.#fire = fire;
    this.#timer = setTimeout(() => this.#expire(), ms);
  }

  pause(): void {
    if (this.#paused++ > 0 || this.#done) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const now = performance.now();
    this.#left -= now - this.#since;
    this.#since = now;
  }

  resume(): void {
    if (this.#paused === 0 || --this.#paused > 0 || this.#done) return;
    const now = performance.now();
    this.pausedMs += now - this.#since;
    this.#since = now;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, this.#left));
  }

  /** Stops it for good: `fire` is not called. */
  clear(): void {
    this.#done = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #expire(): void {
    if (this.#done) return;
    this.#done = true;
    this.#timer = undefined;
    this.#fire();
  }
}

/**
 * The clocks of one attempt (its timeout, its `wallMs` limit), paused and resumed together.
 *
 * @example const clocks = new ClockSet(); clocks.add(timer); clocks.pause();
 */
export class ClockSet implements TimeoutClock {
  readonly #clocks: TimeoutClock[] = [];
  #paused = 0;

  /** Adds a clock; paused at once when the set is. */
  add(clock: TimeoutClock): void {
    this.#clocks.push(clock);
    for (let i = 0; i < this.#paused; i++) clock.pause();
  }

  pause(): void {
    this.#paused++;
    for (const clock of this.#clocks) clock.pause();
  }

  resume(): void {
    if (this.#paused === 0) return;
    this.#paused--;
    for (const clock of this.#clocks) clock.resume();
  }
}
