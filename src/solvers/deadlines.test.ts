import { describe, expect, it } from "vitest";
import { deadline } from "./deadlines.js";

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("deadlines", () => {
  it("fires each deadline once, never before its time, in the order they began", async () => {
    const fired: { name: string; after: number }[] = [];
    const start = performance.now();
    const at = (name: string) => () => fired.push({ name, after: performance.now() - start });
    deadline(40, at("a"));
    await wait(10);
    // Measured, not assumed: a 10 ms setTimeout may fire when performance.now() has moved 9.6 ms
    // (its clock is the event loop's, in whole ms), and c's time runs from when it was made.
    const later = performance.now() - start;
    deadline(40, at("b"));
    deadline(15, at("c"));
    await wait(120);
    // Each fires at or after its own time: a at 40 ms, b at later + 40, c at later + 15.
    const due: Record<string, number> = { a: 40, b: later + 40, c: later + 15 };
    expect(fired.map((f) => f.name).sort()).toEqual(["a", "b", "c"]);
    for (const f of fired) expect(f.after).toBeGreaterThanOrEqual(due[f.name]!);
    // In the order of their times (b, made after a with the same duration, always after it). On a
    // quiet machine c's time comes 15 ms before a's; a stalled one (10 ms waited 25 or more) moves
    // it after a's, and within a few milliseconds of each other the two timers' order is the
    // event loop's (each timer runs on its clock, in whole milliseconds, from when it was set).
    const order = fired.map((f) => f.name);
    expect(order.indexOf("b")).toBeGreaterThan(order.indexOf("a"));
    if (Math.abs(due.c! - due.a!) >= 5) {
      const expected = Object.keys(due).sort((x, y) => due[x]! - due[y]!);
      expect(order).toEqual(expected);
    }
  });

  it("does not fire a cancelled deadline, also when it held the queue's timer", async () => {
    const fired: string[] = [];
    const first = deadline(30, () => fired.push("first"));
    deadline(30, () => fired.push("second"));
    const third = deadline(30, () => fired.push("third"));
    first.cancel();
    third.cancel();
    third.cancel();
    await wait(90);
    expect(fired).toEqual(["second"]);
  });

  it("keeps the deadlines behind a slow one while thousands are answered", async () => {
    const fired: number[] = [];
    const slow = deadline(50, () => fired.push(-1));
    for (let i = 0; i < 5_000; i++) deadline(50, () => fired.push(i)).cancel();
    const last = deadline(50, () => fired.push(5_000));
    await wait(150);
    expect(fired).toEqual([-1, 5_000]);
    slow.cancel();
    last.cancel();
  });

  it("lets a process with nothing pending exit (the timer does not hold it)", async () => {
    const { spawnSync } = await import("node:child_process");
    const { fileURLToPath } = await import("node:url");
    const url = new URL("./deadlines.ts", import.meta.url);
    const script = `import { deadline } from ${JSON.stringify(fileURLToPath(url))};
      const d = deadline(60_000, () => process.exit(3)); d.cancel();
      deadline(60_000, () => process.exit(4));`;
    const child = spawnSync(process.execPath, [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      script,
    ]);
    // A pending deadline's timer would have held it for the minute, then exited 4.
    expect(child.status).toBe(0);
  });
});
