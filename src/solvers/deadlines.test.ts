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
    expect(later).toBeLessThan(25); // else a would end before c
    expect(fired.map((f) => f.name)).toEqual(["c", "a", "b"]);
    expect(fired[0]!.after).toBeGreaterThanOrEqual(later + 15);
    expect(fired[1]!.after).toBeGreaterThanOrEqual(40);
    expect(fired[2]!.after).toBeGreaterThanOrEqual(later + 40);
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
