import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Two projects: the Node side (store, HTTP app, Node server, races) on real
// file databases, and the Worker in the Workers runtime on D1, both from the
// same migrations/ folder.
export default defineConfig({
  test: {
    silent: "passed-only", // the app's request log, shown only for a failing test
    projects: [
      {
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
              bindings: {
                TEST_MIGRATIONS: await readD1Migrations("migrations"),
                FENCELEASE_TOKENS: "worker-test-token",
              },
            },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/worker/**/*.test.ts"],
          setupFiles: ["test/worker/apply-migrations.ts"],
        },
      },
    ],
  },
});
