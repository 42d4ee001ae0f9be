import { createExecutionContext, env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { objectDriver } from "../../../src/drivers/durable-object-sql.ts";
import { MIGRATIONS } from "../../../src/runtime/cloudflare/migrations.ts";
import { migrate } from "../../../src/store/migrate.ts";
import { EDITED_MIGRATIONS } from "../../../src/store/migration-repairs.ts";
import { storageMode } from "../../../src/runtime/cloudflare/env.ts";
import worker from "../../../src/worker.ts";
import { queueObject } from "../storage-mode.ts";

// Objects mode serves the whole API: every route of the OpenAPI document is
// answered by a queue's object or put together by the router (the router's own
// app reads no storage, and a route left to it would fail with a 500); each
// object builds its SQLite from the migrations/ files, once.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts

describe("objects mode serves every route", () => {
  test("no route of the OpenAPI document answers 500, with placeholder ids and an empty JSON body", async () => {
    const document = (await (await SELF.fetch("https://fencelease.test/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    const asked: string[] = [];
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const method of Object.keys(methods)) {
        const url = path.replace("{id}", "rt-job").replace("{queue}", "rt-queue").replace("{name}", "rt-schedule");
        const response = await SELF.fetch(`https://fencelease.test${url}`, {
          method: method.toUpperCase(),
          headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
          body: method === "get" || method === "head" ? undefined : "{}",
        });
        asked.push(`${method.toUpperCase()} ${url} ${response.status}`);
        expect(response.status, `${method.toUpperCase()} ${url}`).not.toBe(500);
      }
    }
    expect(asked.length).toBeGreaterThan(25);
  });

  test("STORAGE is d1 or objects; anything else is refused, saying so", async () => {
    expect(storageMode({ ...env, STORAGE: "objects" })).toBe("objects");
    expect(() => storageMode({ ...env, STORAGE: "object" })).toThrow('STORAGE must be "d1" or "objects", got "object"');
    expect(() => storageMode({ ...env, STORAGE: "objects", QUEUES: undefined })).toThrow("needs the Durable Object bindings QUEUES");
    const misconfigured = Promise.resolve().then(() => worker.fetch(new Request("https://fencelease.test/healthz") as never, { ...env, STORAGE: "sqlite" }, createExecutionContext()));
    await expect(misconfigured).rejects.toThrow('STORAGE must be "d1" or "objects", got "sqlite"');
  });
});

describe("a queue's object and the migrations/ folder", () => {
  test("the Worker bundles every file of migrations/, and an object applies each once, with the repair in its place, recorded in d1_migrations with its checksum, when a call first writes there", async () => {
    expect(MIGRATIONS.map((migration) => migration.name)).toEqual(env.TEST_MIGRATIONS.map((migration) => migration.name));
    const enqueued = await SELF.fetch("https://fencelease.test/v1/queues/rt-migrated/jobs", {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({ jobs: [{ id: "rt-migrated-1" }] }),
    });
    expect(enqueued.status).toBe(200);
    const applied = await runInDurableObject(queueObject("rt-migrated"), async (_object, state) => ({
      recorded: state.storage.sql.exec("SELECT name FROM d1_migrations ORDER BY id").toArray().map((row) => row.name),
      checksums: state.storage.sql.exec("SELECT name FROM migration_checksums ORDER BY name").toArray().map((row) => row.name),
      again: await migrate(objectDriver(state.storage as never), MIGRATIONS),
    }));
    expect(applied).toEqual({
      recorded: [...MIGRATIONS.map((migration) => migration.name), EDITED_MIGRATIONS.name].sort(),
      checksums: MIGRATIONS.map((migration) => migration.name),
      again: [],
    });
  });
});
