import { describe, expect, it } from "vitest";
import { AuthFailures } from "./auth-failures.js";

function clocked(options: ConstructorParameters<typeof AuthFailures>[0] = {}) {
  let now = 1_000_000;
  const failures = new AuthFailures({ ...options, now: () => now });
  return { failures, advance: (ms: number) => (now += ms) };
}

describe("AuthFailures", () => {
  it("lets an address fail 10 times a minute, then makes it wait until the minute is over", () => {
    const { failures, advance } = clocked();
    for (let i = 0; i < 10; i++) {
      expect(failures.retryAfterMs("10.0.0.1")).toBe(0);
      failures.record("10.0.0.1");
      advance(1_000);
    }
    expect(failures.retryAfterMs("10.0.0.1")).toBe(50_000);
    expect(failures.retryAfterMs("10.0.0.2")).toBe(0);
    advance(50_000);
    expect(failures.retryAfterMs("10.0.0.1")).toBe(0);
    // A new window: the count starts over.
    failures.record("10.0.0.1");
    expect(failures.retryAfterMs("10.0.0.1")).toBe(0);
  });

  it("forgets an address that succeeded", () => {
    const { failures } = clocked();
    for (let i = 0; i < 9; i++) failures.record("a");
    failures.clear("a");
    for (let i = 0; i < 9; i++) failures.record("a");
    expect(failures.retryAfterMs("a")).toBe(0);
  });

  it("keeps at most maxAddresses, dropping expired windows and then the oldest", () => {
    const { failures, advance } = clocked({ maxAddresses: 3, windowMs: 100, maxFailures: 1 });
    failures.record("a");
    advance(60);
    failures.record("b");
    failures.record("c");
    failures.record("d");
    expect(failures.size).toBe(3);
    // "a", the oldest, went; the others still wait.
    expect(failures.retryAfterMs("a")).toBe(0);
    expect(failures.retryAfterMs("b")).toBe(100);
    advance(100);
    failures.record("e");
    expect(failures.size).toBe(1);
    for (let i = 0; i < 50_000; i++) failures.record(`x${i}`);
    expect(failures.size).toBe(3);
  });
});
