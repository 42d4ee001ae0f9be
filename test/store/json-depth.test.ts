import fc from "fast-check";
import { expect, test } from "vitest";
import { textNestsDeeper, valueNestsDeeper } from "../../src/json/depth.ts";

// How deep JSON nests, measured two ways (src/json/depth.ts): over the
// text, without parsing it, and over a value, without recursion. Both must
// agree with the depth of the value itself, whatever its strings hold.

/** The depth of a JSON value, counted the plain recursive way. */
const depthOf = (value: unknown): number =>
  value !== null && typeof value === "object" ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;

// Strings full of what a scan over the text could mistake for structure: brackets, quotes, backslashes.
const tricky = fc.string({ unit: fc.constantFrom("[", "]", "{", "}", '"', "\\", "a", " ", "é", "😀") });
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, tricky, fc.integer(), fc.constant(null), fc.array(tie("value"), { maxLength: 3 }), fc.dictionary(tricky, tie("value"), { maxKeys: 3 })),
})).value;

test("over the text and over the value, a depth is measured as the value has it, whatever brackets, quotes and backslashes its strings hold", () => {
  fc.assert(
    fc.property(json, fc.integer({ min: 0, max: 6 }), (value, max) => {
      const deeper = depthOf(value) > max;
      // Padded past the length below which the text cannot be deep enough, so that the scan always runs.
      expect(textNestsDeeper(JSON.stringify(value) + " ".repeat(20), max)).toBe(deeper);
      expect(valueNestsDeeper(value, max)).toBe(deeper);
    }),
    { numRuns: 2_000 },
  );
});

test("a value is measured as JSON.stringify writes it: through toJSON, and a value that holds itself nests without end", () => {
  expect(valueNestsDeeper({ at: new Date(0) }, 1)).toBe(false); // written as a string
  expect(valueNestsDeeper({ inner: { toJSON: () => [[1]] } }, 2)).toBe(true);
  const loop: { self?: unknown } = {};
  loop.self = loop;
  expect(valueNestsDeeper(loop, 1_000)).toBe(true);
});
