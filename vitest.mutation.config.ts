import { defineConfig } from "vitest/config";

// The fast, in-process contract tests that `stryker run` mutates the store against.
export default defineConfig({
  test: {
    include: [
      "test/store/store.test.ts",
      "test/store/errors.test.ts",
      "test/store/health.test.ts",
      "test/store/maintenance.test.ts",
      "test/store/storage.test.ts",
      "test/store/token-cache.test.ts",
      "test/store/printable.test.ts",
      "test/store/migrate.test.ts",
      "test/store/races.test.ts",
      "test/store/key-races.test.ts",
      "test/store/property.test.ts",
      "test/drivers/driver.test.ts",
    ],
    // races.test.ts and key-races.test.ts skip their OS-process races: a mutant switched on in this
    // process never reaches a child process, so they could kill nothing. The
    // store's long memory test is skipped too: it kills nothing the others miss.
    env: { FENCELEASE_IN_PROCESS_ONLY: "1" },
    testTimeout: 30_000,
  },
});
