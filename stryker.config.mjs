// @ts-check
// Mutation testing of the lease store: `npm run test:mutation` (with scripts/note-mutants.ts).
// Stryker leaves the inside of SQL strings alone; scripts/note-mutants.ts mutates those.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts" },
  coverageAnalysis: "perTest",
  mutate: ["src/store/**/*.ts"], // the store and its SQL, every file: a new one is mutated without being listed
  ignorePatterns: ["reports", "data", ".wrangler", "dist", "coverage", "bench"],
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  thresholds: { high: 95, low: 85, break: null },
};
