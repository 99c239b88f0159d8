import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// The spec's schemas, vendored unchanged with the other EvalPort test fixtures.
const SPEC = new URL("../../test/fixtures/evalport/schemas/", import.meta.url);
const OURS = new URL("./schemas/", import.meta.url);

describe("shipped EvalPort schemas", () => {
  it.each(["resultset.json", "suite.json", "testcase.json", "grader.json"])(
    "%s has the same content as the spec's copy",
    (file) => {
      const read = (base: URL) => JSON.parse(readFileSync(new URL(file, base), "utf8")) as unknown;
      expect(read(OURS)).toEqual(read(SPEC));
    },
  );

  it("carries the Apache-2.0 notice naming its source", () => {
    const notice = readFileSync(new URL("NOTICE.md", OURS), "utf8");
    expect(notice).toContain("Apache License, Version 2.0");
    expect(notice).toContain("adhabnr-ux/evalport");
    expect(notice).toContain("1.0.0-rc.5");
  });
});
