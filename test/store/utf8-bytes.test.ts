import { describe, expect, it } from "vitest";
import { utf8Bytes } from "../../src/store/validate.ts";

// utf8Bytes counts what TextEncoder would write, without encoding: these
// check it against TextEncoder itself, at the edges of each UTF-8 length.

const encoded = (text: string) => new TextEncoder().encode(text).byteLength;

describe("utf8Bytes", () => {
  it.each([
    ["the empty text", ""],
    ["ASCII, up to U+007F", "a\u007f"],
    ["two bytes, U+0080 and U+07FF", "\u0080\u07ff"],
    ["three bytes, U+0800 and U+FFFF", "\u0800\uffff"],
    ["a surrogate pair (U+1F600): four bytes", "\u{1f600}"],
    ["the pairs at the edges, U+10000 and U+10FFFF", "\u{10000}\u{10ffff}"],
    ["a lone high surrogate, written as U+FFFD", "a\ud800b"],
    ["a lone high surrogate at the end", "ab\udbff"],
    ["a lone low surrogate", "\udc00x"],
    ["a low surrogate before a high one", "\udc00\ud800"],
    ["a high surrogate after a pair", "\u{1f600}\ud83d"],
    ["two high surrogates, then a low", "\ud800\ud800\udc00"],
  ])("counts %s as TextEncoder does", (_why, text) => {
    expect(utf8Bytes(text)).toBe(encoded(text));
  });

  it("agrees with TextEncoder on random text of every range", () => {
    // A fixed seed: the same texts on every run.
    let seed = 42;
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
    const edges = [0x00, 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xffff];
    for (let round = 0; round < 2_000; round++) {
      const units = Array.from({ length: Math.floor(random() * 12) }, () => {
        const edge = edges[Math.floor(random() * edges.length)]!;
        return Math.min(0xffff, Math.max(0, edge + Math.floor(random() * 5) - 2));
      });
      const text = String.fromCharCode(...units);
      expect(utf8Bytes(text), JSON.stringify(text)).toBe(encoded(text));
    }
  });
});
