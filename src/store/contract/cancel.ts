import { describe, expect, it } from "vitest";
import { type HarnessRef, newRun, owner } from "./fixtures.js";

/** Cancel requests through the store: how `stet cancel` reaches an owner on another machine. */
export function describeCancelContract(h: HarnessRef): void {
  describe("cancel requests", () => {
    it("reaches the owner at its next heartbeat, from another connection", async () => {
      const { owner: me } = await newRun(h.store, { id: "c1" });
      const other = await h.connect();
      expect(await other.runs.requestCancel("c1", me.token, "asked by pid 7 on elsewhere")).toBe(
        true,
      );
      expect(await h.store.runs.heartbeat("c1", me.token)).toEqual({
        owned: true,
        cancelRequested: "asked by pid 7 on elsewhere",
      });
      // The request stands until the run changes hands: every beat sees it.
      expect(await h.store.runs.heartbeat("c1", me.token)).toMatchObject({ owned: true });
    });

    it("is refused for a token that no longer owns the run, and changes nothing", async () => {
      const { owner: me } = await newRun(h.store, { id: "c2" });
      expect(await h.store.runs.requestCancel("c2", "not-the-owner", "x")).toBe(false);
      expect(await h.store.runs.requestCancel("ghost", me.token, "x")).toBe(false);
      expect(await h.store.runs.heartbeat("c2", me.token)).toEqual({
        owned: true,
        cancelRequested: null,
      });
    });

    it.each(["released", "taken over"])("is cleared once the run is %s", async (how) => {
      const { owner: first } = await newRun(h.store, { id: "c3" });
      await h.store.runs.requestCancel("c3", first.token, "stop");
      const next = owner("next");
      if (how === "released") {
        await h.store.runs.release("c3", first.token, "interrupted", "cancelled");
        expect(await h.store.runs.claim("c3", next, null)).toBe(true);
      } else {
        expect(await h.store.runs.claim("c3", next, first.token)).toBe(true);
      }
      expect(await h.store.runs.heartbeat("c3", next.token)).toEqual({
        owned: true,
        cancelRequested: null,
      });
    });
  });
}
