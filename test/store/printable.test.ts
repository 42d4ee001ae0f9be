import { describe, expect, test } from "vitest";
import { hasUnprintable, printable } from "../../src/store/printable.ts";

// printable makes text from a request or an answer safe for a log line or a
// terminal (the request log, the CLI); hasUnprintable is the store's check.

describe("printable", () => {
  test("writes each unprintable character as its \\uXXXX escape, four lowercase hex digits, and leaves the rest as it is", () => {
    expect(printable("GET /jobs/a\nb")).toBe("GET /jobs/a\\u000ab");
    expect(printable("\u0000\u001b[31m\u007f\u009f")).toBe("\\u0000\\u001b[31m\\u007f\\u009f");
    expect(printable("x\u2028y\u202ez\u2066")).toBe("x\\u2028y\\u202ez\\u2066");
    expect(printable("naïve café ✓ 😀")).toBe("naïve café ✓ 😀");
    expect(printable("")).toBe("");
  });

  test("hasUnprintable is true exactly for the text printable changes", () => {
    for (const text of ["a\nb", "\u0085", "x\u200e", "plain", "naïve 😀", ""]) {
      expect(hasUnprintable(text)).toBe(printable(text) !== text);
    }
  });
});
