import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { createApp, LeaseStore } from "../../src/index.ts";
import { openStore } from "../../src/node.ts";
import { freshDir } from "../fresh-db.ts";

// A file database that cannot take writes: read-only, corrupt, full. Each is
// a 503 `unavailable` that names it (never a 500), /healthz says so, and the
// log says so once. The conditions are real SQLite ones on a real file: CI
// runs as root, where a chmod stops no write, so read-only is PRAGMA
// query_only on the store's own connection; full is PRAGMA max_page_count;
// corrupt is a file whose tables' first pages are overwritten.

const T = 1_000_000;
const TTL = 60_000;

type Answer = { status: number; body: any };

/** The Node app over a store on a migrated file (after `setup` ran on it), on a driver the test holds, with the store's log kept. */
async function fileApp(setup: (store: LeaseStore, path: string) => Promise<void> = async () => {}) {
  const path = join(freshDir(), "conditions.db");
  const first = await openStore({ url: `file:${path}` });
  await setup(first, path);
  first.close();
  const driver = libsqlFileDriver(path);
  const lines: string[] = [];
  const store = new LeaseStore(driver, { health: { log: (line) => lines.push(line) } });
  onTestFinished(() => store.close());
  const app = createApp({ store, auth: "off", clock: () => T });
  async function call(method: string, route: string, body?: unknown): Promise<Answer> {
    const init: RequestInit = body === undefined ? { method } : { method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
    const response = await app.request(route, init);
    return { status: response.status, body: await response.json() };
  }
  /** Every job as stored, read on a connection of its own. */
  async function jobs() {
    const reader = createClient({ url: `file:${path}` });
    try {
      return (await reader.execute("SELECT id, owner, fence, attempts, payload FROM jobs ORDER BY id")).rows.map((row) => ({ ...row }));
    } finally {
      reader.close();
    }
  }
  const pragma = async (sql: string) => Object.values((await driver.run({ sql: `PRAGMA ${sql}`, args: [] }))[0] ?? {})[0];
  return { call, lines, jobs, pragma };
}

const unavailable = (reason: string, message: RegExp) => ({
  status: 503,
  body: { error: { code: "unavailable", message: expect.stringMatching(message), details: { reason, outcome: "not_applied" } } },
});

describe("a database that has become read-only", () => {
  test("every write answers 503 read_only naming it, nothing changes, /healthz says so, the log says so once; writable again, all is well", async () => {
    const { call, lines, jobs, pragma } = await fileApp((store) => store.enqueue("job-1", { now: T }).then(() => {}));
    expect((await call("GET", "/healthz")).status).toBe(200);
    const before = await jobs();
    await pragma("query_only = ON");
    expect(await call("GET", "/healthz")).toMatchObject(unavailable("read_only", /read-only/)); // the probe write meets it
    for (const [route, body] of [
      ["/v1/jobs", { id: "job-2" }],
      ["/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL }],
      ["/v1/queues/default/claim", { owner: "A", ttlMs: TTL }],
    ] as const) {
      expect(await call("POST", route, body), route).toMatchObject(unavailable("read_only", /read-only: check the permissions/));
    }
    expect((await call("GET", "/v1/jobs/job-1")).status).toBe(200); // reads still answer
    expect(await call("GET", "/healthz")).toMatchObject(unavailable("read_only", /read-only/));
    expect(await jobs()).toEqual(before);
    expect(lines).toEqual([expect.stringMatching(/writes are failing \(read_only\): the database is read-only.*SQLITE_READONLY/)]);

    await pragma("query_only = OFF");
    expect((await call("POST", "/v1/jobs", { id: "job-2" })).status).toBe(201);
    expect(await call("GET", "/healthz")).toEqual({ status: 200, body: { ok: true } });
    expect(lines).toEqual([expect.stringMatching(/read_only/), "fencelease: writes succeed again (they were failing: read_only)"]);
  });
});

describe("a corrupt database file", () => {
  test("reads and writes answer 503 corrupt naming it, never 500; /healthz says so from then on; the log says so once", async () => {
    const { call, lines } = await fileApp(async (store, path) => {
      for (let i = 0; i < 100; i++) await store.enqueue(`job-${i}`, { payload: { text: "x".repeat(200) }, now: T });
      const client = createClient({ url: `file:${path}` });
      await client.execute("PRAGMA wal_checkpoint(TRUNCATE)"); // every page in the file itself
      // The first page of every table and index of the store; the schema and the migrations' record stay readable.
      const roots = (await client.execute("SELECT rootpage FROM sqlite_schema WHERE rootpage > 1 AND name NOT LIKE '%migrations%'")).rows.map((row) => Number(row.rootpage));
      const pageSize = Number((await client.execute("PRAGMA page_size")).rows[0]!.page_size);
      client.close();
      store.close();
      const file = openSync(path, "r+");
      for (const page of roots) writeSync(file, Buffer.alloc(pageSize, 0x5a), 0, pageSize, (page - 1) * pageSize);
      closeSync(file);
    });
    const corrupt = unavailable("corrupt", /corrupt \(SQLITE_CORRUPT\): restore it from a backup/);
    expect(await call("GET", "/v1/stats")).toMatchObject(corrupt);
    expect(await call("GET", "/v1/jobs/job-1")).toMatchObject(corrupt);
    expect(await call("POST", "/v1/jobs", { id: "job-new" })).toMatchObject(corrupt);
    expect(await call("GET", "/healthz")).toMatchObject(corrupt);
    expect(await call("GET", "/healthz")).toMatchObject(corrupt); // it does not heal
    expect(lines).toEqual([expect.stringMatching(/writes are failing \(corrupt\).*SQLITE_CORRUPT/)]);
  });
});

describe("a full disk", () => {
  test("a write that needs space answers 503 full, nothing of it is stored; /healthz says so until a write succeeds", async () => {
    const { call, lines, jobs, pragma } = await fileApp();
    expect((await call("POST", "/v1/jobs", { id: "small" })).status).toBe(201);
    await pragma(`max_page_count = ${await pragma("page_count")}`); // the file may not grow: SQLITE_FULL, as on a full disk
    const before = await jobs();
    expect(await call("POST", "/v1/jobs", { id: "big", payload: { text: "x".repeat(100_000) } })).toMatchObject(unavailable("full", /disk is full.*free some space/));
    expect(await jobs()).toEqual(before);
    expect(await call("GET", "/healthz")).toMatchObject(unavailable("full", /full/)); // a probe would pass: it needs no page
    expect(lines).toEqual([expect.stringMatching(/writes are failing \(full\).*SQLITE_FULL/)]);

    await pragma("max_page_count = 1000000"); // space again
    expect((await call("POST", "/v1/jobs", { id: "big", payload: { text: "x".repeat(100_000) } })).status).toBe(201);
    expect(await call("GET", "/healthz")).toEqual({ status: 200, body: { ok: true } });
  });
});
