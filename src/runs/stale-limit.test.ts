import { describe, expect, it } from "vitest";
import { staleLimit } from "./stale-limit.js";

describe("staleLimit", () => {
  it.each([
    [undefined, {}],
    ["", {}],
    ["10000", { staleMs: 10_000 }],
  ])("STET_STALE_MS=%j gives %j", (value, expected) => {
    expect(staleLimit(value === undefined ? {} : { STET_STALE_MS: value })).toEqual(expected);
  });

  it.each(["abc", "500", "1.5e3x", "-30000", " ", " 2000", "0x7d0", "1e4", "2000.0"])(
    "refuses STET_STALE_MS=%j as a usage error",
    (value) => {
      expect(() => staleLimit({ STET_STALE_MS: value })).toThrow(
        expect.objectContaining({
          code: "E_USAGE",
          message: expect.stringContaining("STET_STALE_MS"),
        }),
      );
    },
  );
});
