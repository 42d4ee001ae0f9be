import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { splitStatements } from "./src/store/sql-script.ts";
import { earlierMains } from "./test/fixtures/earlier-mains.ts";

// The examples import the package by name, as its users do; in the tests that
// name means the sources here, not the build in dist/.
const alias = {
  "fencelease/client": fileURLToPath(new URL("./src/client/index.ts", import.meta.url)),
  "fencelease/node": fileURLToPath(new URL("./src/node.ts", import.meta.url)),
  "fencelease/worker": fileURLToPath(new URL("./src/worker.ts", import.meta.url)),
  fencelease: fileURLToPath(new URL("./src/index.ts", import.meta.url)),
};

// A .sql file imported as its text, as wrangler's [[rules]] type "Text" bundles it
// (the queues' objects apply the migrations/ files: src/runtime/cloudflare/migrations.ts).
const sqlAsText = {
  name: "sql-as-text",
  transform(code: string, id: string) {
    return id.endsWith(".sql") ? { code: `export default ${JSON.stringify(code)};`, map: null } : undefined;
  },
};

const testMigrations = await readD1Migrations("migrations");

// The migrations/ folders of three earlier mains (test/fixtures/earlier-mains.ts), as wrangler
// would have applied them: test/worker/earlier-mains-d1.test.ts builds a database with each.
const earlier = earlierMains(testMigrations.map((migration) => migration.name)).map(({ commit, migrations }) => ({
  commit,
  binding: `DB_AT_${commit.toUpperCase()}`,
  migrations: migrations.map(({ name, sql }) => ({ name, queries: splitStatements(sql) })),
}));

// The Worker in the Workers runtime, as a wrangler config builds it.
const inWorkers = (configPath: string, d1Databases: string[] = []) =>
  cloudflareTest({
    wrangler: { configPath },
    miniflare: {
      // A second database that no setup migrates: test/worker/migrate-d1.test.ts builds it step by step.
      d1Databases: ["DB_UNMIGRATED", ...earlier.map((main) => main.binding), ...d1Databases],
      bindings: {
        TEST_MIGRATIONS: testMigrations,
        EARLIER_MAINS: earlier,
        FENCELEASE_TOKENS: "worker-test-token",
        // test/worker/objects/bench.test.ts runs only when asked: FENCELEASE_BENCH=1 (or quick).
        BENCH: process.env.FENCELEASE_BENCH ?? "",
      },
    },
  });

// The Worker's tests that hold in both storage modes (docs/scale.md): the
// objects project runs them again, with objects mode's own tests (its alarms
// in place of the cron's tests, the directory, races, the contract suites).
const bothModes = ["test/worker/worker.test.ts", "test/worker/long-poll.test.ts", "test/worker/ui.test.ts", "test/worker/tokens.test.ts"];

// Three projects: the Node side (store, HTTP app, Node server, races) on real
// file databases; the Worker in the Workers runtime on D1 (wrangler.toml); and
// the Worker in objects mode, each queue in its own Durable Object
// (wrangler.objects.toml); all from the same migrations/ folder.
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
        plugins: [inWorkers("./wrangler.toml"), sqlAsText],
        resolve: { alias },
        test: {
          name: "workers",
          include: ["test/worker/**/*.test.ts"],
          exclude: ["test/worker/objects/**"],
          setupFiles: ["test/worker/apply-migrations.ts"],
          // A real HTTP endpoint, in Node, for the Worker's push deliveries (test/worker/push.test.ts).
          globalSetup: ["test/push/worker-endpoint.setup.ts"],
        },
      },
      {
        // DB: a D1 database beside the objects, for the bench of both modes in one run.
        plugins: [inWorkers("./wrangler.objects.toml", ["DB"]), sqlAsText],
        resolve: { alias },
        test: {
          name: "workers-objects",
          include: [...bothModes, "test/worker/objects/**/*.test.ts"],
          globalSetup: ["test/push/worker-endpoint.setup.ts"],
        },
      },
    ],
  },
});
