import { describe, expect, test } from "vitest";
import { type ChaosOptions, describeReport, runChaos } from "./run.ts";

// The short chaos run of `npm test`; `npm run test:chaos` runs the full size.
// Skipped under mutation testing, like the other multi-process tests: a mutant
// lives in the test process only, never in the server's.
const SHORT = { workers: 3, jobs: 150, ttlMs: 300, workerKills: 2, serverRestarts: 1, stallRate: 0.04, seed: 20_251, deadlineMs: 60_000 };

describe.skipIf(process.env.FENCELEASE_IN_PROCESS_ONLY === "1")("chaos", () => {
  test.each<[string, Partial<ChaosOptions>]>([
    ["3 workers over HTTP, on the server as npm start runs it, with group commit", { groupCommit: true }],
    ["3 workers over HTTP, on the server without group commit", { groupCommit: false }],
    // The in-process ones are killed in the middle of their own writes to the file; the server beside them too.
    ["3 workers in-process beside 1 over HTTP, on one file with the server", { workers: 4, inProcessWorkers: 3, workerKills: 3, seed: 20_252 }],
  ])(
    "%s, over 150 jobs, with zombies, SIGKILLed workers and a SIGKILLed server: nothing lost, no stale write accepted",
    async (_, options) => {
      const report = await runChaos({ ...SHORT, ...options });
      console.log(describeReport(report).join("\n"));
      expect(report.violations).toEqual([]);
      expect(report.counts).toMatchObject({ jobs: 150, done: 150, kills: options.workerKills ?? SHORT.workerKills, restarts: 1 });
      expect(report.counts.zombies).toBeGreaterThan(0);
      expect(report.counts.refusedStaleWrites).toBeGreaterThan(0);
    },
    90_000,
  );
});
