import { describe, expect, test } from "vitest";
import { describeReport, runChaos } from "./run.ts";

// The short chaos run of `npm test`; `npm run test:chaos` runs the full size.
// Skipped under mutation testing, like the other multi-process tests: a mutant
// lives in the test process only, never in the server's.
describe.skipIf(process.env.FENCELEASE_IN_PROCESS_ONLY === "1")("chaos", () => {
  test.each([
    ["the server as npm start runs it, with group commit", true],
    ["the server without group commit", false],
  ])(
    "3 workers over 150 jobs, with zombies, SIGKILLed workers and a SIGKILLed server, on %s: nothing lost, no stale write accepted",
    async (_, groupCommit) => {
      const report = await runChaos({ workers: 3, jobs: 150, ttlMs: 300, workerKills: 2, serverRestarts: 1, stallRate: 0.04, seed: 20_251, deadlineMs: 60_000, groupCommit });
      console.log(describeReport(report).join("\n"));
      expect(report.violations).toEqual([]);
      expect(report.counts).toMatchObject({ jobs: 150, done: 150, kills: 2, restarts: 1 });
      expect(report.counts.zombies).toBeGreaterThan(0);
      expect(report.counts.refusedStaleWrites).toBeGreaterThan(0);
    },
    90_000,
  );
});
