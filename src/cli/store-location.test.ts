import { describe, expect, it } from "vitest";
import { storeLocation } from "./store-location.js";

const usageError = (message: string) =>
  expect.objectContaining({ code: "E_USAGE", message: expect.stringContaining(message) });

describe("storeLocation", () => {
  it("takes --store, else STET_STORE, else .stet/stet.db", () => {
    expect(storeLocation("runs.db", { STET_STORE: "other.db" })).toBe("runs.db");
    expect(storeLocation(undefined, { STET_STORE: "other.db" })).toBe("other.db");
    expect(storeLocation(undefined, {})).toBe(".stet/stet.db");
  });

  it.each([
    "./x.db",
    "/tmp/a b/x.db",
    "postgres://db/x",
    "POSTGRESQL://u:p@db:5432/x?schema=s",
    "mysql:",
  ])("keeps %j (a file path or a PostgreSQL URL)", (location) => {
    expect(storeLocation(location, {})).toBe(location);
  });

  it.each(["", " ", "\t"])("refuses an empty --store %j, naming the flag", (location) => {
    expect(() => storeLocation(location, {})).toThrow(
      usageError(`--store ${JSON.stringify(location)} is empty`),
    );
  });

  it("refuses an empty STET_STORE rather than silently using the default", () => {
    expect(() => storeLocation(undefined, { STET_STORE: "" })).toThrow(
      usageError('STET_STORE "" is empty'),
    );
  });

  it.each([
    ["mysql://db/evals", "mysql://"],
    ["sqlite:///tmp/x.db", "sqlite://"],
    ["file:///tmp/x.db", "file://"],
    ["HTTPS://example.com", "HTTPS://"],
    ["postgres+ssl://db/x", "postgres+ssl://"],
  ])("refuses the URL %j, naming the scheme and the supported ones", (location, scheme) => {
    expect(() => storeLocation(location, {})).toThrow(
      usageError(`--store ${JSON.stringify(location)}: ${scheme} is not a supported store`),
    );
    expect(() => storeLocation(undefined, { STET_STORE: location })).toThrow(
      usageError("a postgres:// or postgresql:// URL"),
    );
  });

  it("never repeats a password in the message", () => {
    let message = "";
    try {
      storeLocation("mysql://root:hunter2@db/evals", {});
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("mysql://root:***@db/evals");
    expect(message).not.toContain("hunter2");
  });
});
