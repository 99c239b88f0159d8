import { describe, expect, it } from "vitest";
import { memorySplit, mergeLimits } from "./limits.js";

const MiB = 2 ** 20;

describe("memorySplit", () => {
  it("gives /tmp an eighth of memoryMb, /dev/shm a thirty-second, the address space the rest", () => {
    expect(memorySplit(mergeLimits({}))).toEqual({
      tmpBytes: 128 * MiB,
      shmBytes: 32 * MiB,
      addressSpaceBytes: 864 * MiB,
    });
  });

  it.each([1, 2, 3, 7, 100, 1023, 4096])(
    "at memoryMb %i: filesystems of whole 64 KiB, never 0 (unlimited to tmpfs), all within memoryMb",
    (memoryMb) => {
      const { tmpBytes, shmBytes, addressSpaceBytes } = memorySplit(mergeLimits({ memoryMb }));
      for (const size of [tmpBytes, shmBytes]) {
        expect(size).toBeGreaterThan(0);
        expect(size % (64 * 1024)).toBe(0);
      }
      expect(tmpBytes + shmBytes + addressSpaceBytes).toBe(memoryMb * MiB);
    },
  );
});
