import { describe, expect, it } from "vitest";
import { conversationOf, startsWith, withConversation } from "./chat-conversation.js";

const [a, b, c] = [
  { role: "user", content: "a" },
  { role: "assistant", content: "b" },
  { role: "user", content: "c" },
];

describe("a chat step input's conversation", () => {
  it("is ctx.chat's messages or an AI SDK call's prompt, and nothing else", () => {
    expect(conversationOf({ model: "m", messages: [a, b] })).toEqual([a, b]);
    const aiSdk = { provider: "p", model: "m", options: { prompt: [a], maxOutputTokens: 5 } };
    expect(conversationOf(aiSdk)).toEqual([a]);
    expect(conversationOf({ a: 1, b: 2 })).toBeUndefined();
    expect(conversationOf({ messages: "not a list" })).toBeUndefined();
    expect(conversationOf([a, b])).toBeUndefined();
    expect(conversationOf(null)).toBeUndefined();
  });

  it("is replaced in a copy, the rest of the input kept", () => {
    const input = { model: "m", messages: [a, b, c], temperature: 0 };
    expect(withConversation(input, [c])).toEqual({ model: "m", messages: [c], temperature: 0 });
    expect(input.messages).toEqual([a, b, c]);
    const aiSdk = { provider: "p", options: { prompt: [a, b], maxOutputTokens: 5 } };
    expect(withConversation(aiSdk, [b])).toEqual({
      provider: "p",
      options: { prompt: [b], maxOutputTokens: 5 },
    });
  });

  it("continues an earlier one when it begins with all of its messages, as JSON in any key order", () => {
    expect(startsWith([a, b, c], [a, b])).toBe(true);
    expect(startsWith([a, b], [a, b])).toBe(true);
    expect(startsWith([{ content: "a", role: "user" }, b], [a])).toBe(true);
    expect(startsWith([a, c], [a, b])).toBe(false);
    expect(startsWith([a], [a, b])).toBe(false);
    expect(startsWith([a], [])).toBe(false);
    expect(startsWith([{ ...a, name: "x" }], [a])).toBe(false);
    expect(startsWith([{ role: "user", content: ["a"] }], [{ role: "user", content: "a" }])).toBe(
      false,
    );
    expect(startsWith([[1, 2]], [[1, 2, 3]])).toBe(false);
  });
});
