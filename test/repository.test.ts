import { execFileSync } from "node:child_process";
import { expect, test } from "vitest";

// What the repository holds: a scratch file (a measurement tried once, kept
// locally) never lands in it, though `git add -A` would take it.

const git = (...args: string[]) => execFileSync("git", args, { encoding: "utf8" }).trim();

test("the repository tracks no scratch folder, and git ignores one", () => {
  expect(git("ls-files", "--", ".scratch")).toBe("");
  expect(git("check-ignore", "--no-index", ".scratch/overhead.ts")).toBe(".scratch/overhead.ts");
});
