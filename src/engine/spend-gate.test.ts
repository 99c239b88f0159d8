import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import type { RunEvent } from "../core/events.js";
import { draft, newRun } from "../store/contract/fixtures.js";
import { SpendGate } from "./spend-gate.js";
import { StopControl } from "./stop-control.js";

const store = storesPerTest();
const priced = (costUsd: number) => ({ usage: { inputTokens: 10, outputTokens: 2, costUsd } });

async function gated(maxCostUsd: number) {
  const s = store();
  const { run, owner } = await newRun(s, { ids: ["s1", "s2", "s3", "s4"] });
  const events: RunEvent[] = [];
  const stops = new StopControl({ emit: (e) => events.push(e), inflight: () => 0 });
  const gate = new SpendGate(s, run.id, { maxCostUsd }, stops);
  return { s, run, owner, stops, gate, events };
}

describe("SpendGate (a real SQLite store)", () => {
  it("probes while no priced attempt is stored, then holds the stored spend plus what is in flight to the cap", async () => {
    const { s, run, owner, stops, gate } = await gated(1);
    await gate.start();
    expect(gate.probing).toBe(true);
    await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s1", epoch: 1 }, priced(0.25)),
    ]);
    await gate.look();
    expect(gate.probing).toBe(false);
    // 0.25 spent, 0.25 a key expected: two in flight and one more fit (1.0), three and one more do not.
    expect(gate.over(2)).toBe(false);
    expect(stops.reason).toBeNull();
    expect(gate.over(3)).toBe(true);
    expect(stops.reason).toBe("budget");
    expect(stops.note).toBe(
      "budget: spent $0.25 of the $1.00 cap; finishing the samples in flight",
    );
    expect(stops.signal.aborted).toBe(false);
  });

  it("counts every stored row, whoever committed it, once looked at", async () => {
    const { s, run, owner, stops, gate } = await gated(1);
    await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s1", epoch: 1 }, priced(0.5)),
    ]);
    await gate.start();
    expect(gate.over(0)).toBe(false);
    await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s2", epoch: 1 }, priced(0.5)),
    ]);
    expect(gate.over(0)).toBe(false);
    await gate.look();
    expect(gate.over(0)).toBe(true);
    expect(gate.budget.spentUsd).toBe(1);
    expect(stops.reason).toBe("budget");
  });

  it("says nothing more once the execution stopped for another reason", async () => {
    const { s, run, owner, stops, gate, events } = await gated(0.1);
    await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s1", epoch: 1 }, priced(0.5)),
    ]);
    await gate.start();
    stops.stop("signal", false, "interrupted by a signal");
    expect(gate.over(0)).toBe(false);
    expect(stops.reason).toBe("signal");
    expect(events).toHaveLength(1);
  });

  it("warns once of an attempt that used tokens without a price", async () => {
    const { s, run, owner, gate } = await gated(1);
    const unpriced = { usage: { inputTokens: 5, outputTokens: 1 } };
    const stored = await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s1", epoch: 1 }, unpriced),
      draft({ sampleId: "s2", epoch: 1 }, unpriced),
    ]);
    expect(gate.observe(stored[0]!)).toMatch(/price/);
    expect(gate.observe(stored[1]!)).toBeUndefined();
  });
});
