import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends the run with one plain line, "vitest: N passed, N failed, N skipped",
 * which CI reads to know how many tests ran.
 */
export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const count = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed" || state === "failed") count[state]++;
        else count.skipped++;
      }
    }
    process.stdout.write(`vitest: ${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped\n`);
  }
}
