import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// The examples import the package by name, as its users do; in the tests that
// name means the sources here, not the build in dist/.
const alias = {
  "fencelease/client": fileURLToPath(new URL("./src/client/index.ts", import.meta.url)),
  "fencelease/node": fileURLToPath(new URL("./src/node.ts", import.meta.url)),
  "fencelease/worker": fileURLToPath(new URL("./src/worker.ts", import.meta.url)),
  fencelease: fileURLToPath(new URL("./src/index.ts", import.meta.url)),
};

// Two projects: the Node side (store, HTTP app, Node server, races) on real
// file databases, and the Worker in the Workers runtime on D1, both from the
// same migrations/ folder.
export default defineConfig({
  test: {
    silent: "passed-only", // the app's request log, shown only for a failing test
    reporters: ["default", "./test/plain-summary-reporter.ts"],
    projects: [
      {
        resolve: { alias },
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/worker/**"],
          testTimeout: 30_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              // A second database that no setup migrates: test/worker/migrate-d1.test.ts builds it step by step.
              d1Databases: ["DB_UNMIGRATED"],
              bindings: {
                TEST_MIGRATIONS: await readD1Migrations("migrations"),
                FENCELEASE_TOKENS: "worker-test-token",
              },
            },
          }),
        ],
        resolve: { alias },
        test: {
          name: "workers",
          include: ["test/worker/**/*.test.ts"],
          setupFiles: ["test/worker/apply-migrations.ts"],
          // A real HTTP endpoint, in Node, for the Worker's push deliveries (test/worker/push.test.ts).
          globalSetup: ["test/push/worker-endpoint.setup.ts"],
        },
      },
    ],
  },
});
