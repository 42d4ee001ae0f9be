// @ts-check
// Mutation testing of the lease store: `npm run test:mutation` (with scripts/note-mutants.ts).
// Stryker leaves the inside of SQL strings alone; scripts/note-mutants.ts mutates those.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts" },
  coverageAnalysis: "perTest",
  mutate: process.env.MUTATE ? [process.env.MUTATE] : ["src/store/**/*.ts", "src/json/**/*.ts"], // the store and its SQL, and the JSON rules it keeps, every file: a new one is mutated without being listed
  ignorePatterns: ["reports", "data", ".wrangler", "dist", "coverage", "bench"],
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: process.env.MUTATION_JSON ?? "reports/mutation/mutation.json" },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  incrementalFile: process.env.MUTATION_INCREMENTAL ?? "reports/stryker-incremental.json",
  thresholds: { high: 95, low: 85, break: null },
};
