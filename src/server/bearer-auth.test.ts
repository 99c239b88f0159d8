import { describe, expect, it } from "vitest";
import { setupTestApp as setup } from "../../test/helpers/server-app.js";

const TOKEN = "s3cret-token_value.~+/==";

describe("bearerAuth", () => {
  it.each<[string, Record<string, string>]>([
    ["no header", {}],
    ["an empty header", { authorization: "" }],
    ["another scheme", { authorization: `Basic ${TOKEN}` }],
    ["no token", { authorization: "Bearer" }],
    ["a wrong token", { authorization: "Bearer wrong" }],
    ["a token with a space", { authorization: `Bearer ${TOKEN} x` }],
    ["a token that is too long", { authorization: `Bearer ${TOKEN}x` }],
    ["a token that is too short", { authorization: `Bearer ${TOKEN.slice(1)}` }],
  ])("answers %s with the API's 401", async (_name, headers) => {
    const res = await setup([], { token: TOKEN }).request("/api/runs", { headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="stet"');
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      error: { code: "unauthorized", message: "a valid Authorization: Bearer <token> is required" },
    });
  });

  it.each([`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `Bearer   ${TOKEN}`])(
    "admits %j",
    async (value) => {
      const res = await setup([], { token: TOKEN }).request("/api/runs", {
        headers: { authorization: value },
      });
      expect(res.status).toBe(200);
    },
  );

  // hono's own bearerAuth matches only RFC 6750's token characters, so a STET_TOKEN such as
  // "p@ss!" would lock every client out: the reason this middleware stays ours.
  it.each(["p@ss!word-with-at", "tok=en:with;punctuation"])(
    "admits the token %j",
    async (token) => {
      const res = await setup([], { token }).request("/api/runs", {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
    },
  );
});
