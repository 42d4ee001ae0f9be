// @ts-check
// Mutation testing of the lease store: `npm run test:mutation` (with scripts/note-mutants.ts).
// Stryker leaves the inside of SQL strings alone; scripts/note-mutants.ts mutates those.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts" },
  coverageAnalysis: "perTest",
  mutate: ["src/store/sql/lease.ts", "src/store/sql/claim-next.ts", "src/store/sql/housekeeping.ts", "src/store/sql/cancel.ts", "src/store/sql/many.ts", "src/store/sql/reads.ts", "src/store/store.ts", "src/store/checked.ts", "src/store/validate.ts", "src/store/migrate.ts", "src/store/note.ts", "src/store/refusal.ts", "src/store/stats.ts"],
  ignorePatterns: ["reports", "data", ".wrangler", "dist", "coverage", "bench"],
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  thresholds: { high: 95, low: 85, break: null },
};
