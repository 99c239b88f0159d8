import { describe, expect, it } from "vitest";
import { watchAbort } from "./abort-watch.js";

describe("watchAbort", () => {
  it("calls the watchers of an aborted signal once, in order, but not those that left", () => {
    const controller = new AbortController();
    const calls: string[] = [];
    watchAbort(controller.signal, () => calls.push("a"));
    const leave = watchAbort(controller.signal, () => calls.push("b"));
    const same = () => calls.push("c");
    watchAbort(controller.signal, same);
    const leaveSame = watchAbort(controller.signal, same);
    leave();
    leaveSame();
    controller.abort();
    controller.abort();
    expect(calls).toEqual(["a", "c"]);
  });

  it("keeps the watchers of each signal apart", () => {
    const one = new AbortController();
    const two = new AbortController();
    const calls: string[] = [];
    watchAbort(one.signal, () => calls.push("one"));
    watchAbort(two.signal, () => calls.push("two"));
    two.abort();
    expect(calls).toEqual(["two"]);
  });
});
