import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Client, createClient } from "@libsql/client";
import { afterAll, describe, expect, test } from "vitest";
import { openStore, readMigrations } from "../../src/node.ts";
import { BOOKKEEPING, type Migration } from "../../src/store/migrate.ts";
import { noteVerbs } from "../../src/store/note.ts";
import { everyContract } from "../contract/every-contract.ts";
import { schemaShape } from "../contract/schema-shape.ts";
import { earlierMains } from "../fixtures/earlier-mains.ts";
import { freshStore, freshUrl } from "../fresh-db.ts";

// Databases made by three earlier states of main, whose migrations were then
// edited in place (issue 28): today's open brings each to today's schema, and
// every contract suite runs on it as on a new database. Before the repair, the
// first would not open ("no such column: j.claim_clock" in 0015) and the last
// answered 500 to every claim ("no such column: claim_clock").

const T = 1_000_000;
const TTL = 30_000;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const mains = earlierMains((await readMigrations()).map((migration) => migration.name));

/** Migrates a database file as the runner of those days did: a migration's name recorded, and nothing else. */
async function migrateAsThen(url: string, migrations: Migration[]): Promise<void> {
  const client = createClient({ url });
  try {
    await client.execute(BOOKKEEPING);
    for (const migration of migrations) {
      const tx = await client.transaction("write");
      try {
        await tx.executeMultiple(migration.sql);
        await tx.execute({ sql: "INSERT INTO d1_migrations (name) VALUES (?)", args: [migration.name] });
        await tx.commit();
      } finally {
        tx.close();
      }
    }
  } finally {
    client.close();
  }
}

const rowsOf = (client: Client) => async (sql: string, args: unknown[] = []) => (await client.execute({ sql, args: args as never })).rows.map((row) => ({ ...row }));

// One database file per earlier main, made once; each test opens a copy of it.
const made = mkdtempSync(join(tmpdir(), "fencelease-earlier-"));
afterAll(() => rmSync(made, { recursive: true, force: true }));
const templates = new Map<string, Promise<string>>();
function templateOf(commit: string, migrations: Migration[]): Promise<string> {
  let template = templates.get(commit);
  if (!template) {
    const path = join(made, `${commit}.db`);
    template = migrateAsThen(`file:${path}`, migrations).then(() => path);
    templates.set(commit, template);
  }
  return template;
}

/** A copy of the earlier main's database, opened today (which migrates it). */
async function copyOf(commit: string, migrations: Migration[]): Promise<string> {
  const url = freshUrl();
  copyFileSync(await templateOf(commit, migrations), url.slice("file:".length));
  return url;
}

describe("the earlier mains' migrations/ folders", () => {
  test.each(mains)("at $commit: each file as `git show` gives it, and no other", ({ commit, migrations }) => {
    const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 24 });
    expect(git("ls-tree", "--name-only", commit, "migrations/").trim().split("\n")).toEqual(migrations.map((migration) => `migrations/${migration.name}`));
    for (const migration of migrations) expect(git("show", `${commit}:migrations/${migration.name}`)).toBe(migration.sql);
  });
});

for (const { commit, migrations } of mains) {
  describe(`a database migrated by main at ${commit}`, () => {
    test("opens today with today's schema: every column, index and trigger of a new database, and the same migrations recorded", async () => {
      const url = await copyOf(commit, migrations);
      (await openStore({ url })).close();
      const fresh = freshUrl();
      (await openStore({ url: fresh })).close();
      const [upgraded, today] = [createClient({ url }), createClient({ url: fresh })];
      try {
        expect(await schemaShape(rowsOf(upgraded))).toEqual(await schemaShape(rowsOf(today)));
      } finally {
        upgraded.close();
        today.close();
      }
    });

    test("keeps its jobs, queues and schedules, and claims from its rate-limited queue, claim-next and a schedule's put work", async () => {
      const url = await copyOf(commit, migrations);
      const then = createClient({ url });
      try {
        // Rows as that main's store wrote them: a rate-limited queue, a job in it, a schedule.
        await then.execute({ sql: "INSERT INTO queues (queue, updated_at, refill_per_ms, burst, micro_tokens, tokens_at) VALUES ('limited', ?1, 1000, 2, 2000000, ?1)", args: [T] });
        await then.execute({ sql: "INSERT INTO jobs (id, queue, payload, created_at, updated_at, run_at) VALUES ('old-job', 'limited', '{\"n\":1}', ?1, ?1, ?1)", args: [T] });
        await then.execute({ sql: "INSERT INTO schedules (name, queue, every_ms, next_fire_at, created_at, updated_at, planned_at) VALUES ('nightly', 'limited', 60000, ?1, ?2, ?2, ?2)", args: [T + 60_000, T] });
      } finally {
        then.close();
      }
      const store = await openStore({ url });
      try {
        expect(await store.get("old-job", { now: T })).toMatchObject({ id: "old-job", queue: "limited", payload: { n: 1 }, status: "queued", fence: 0 });
        expect(await noteVerbs(store).claim("old-job", "A", T, TTL)).toBe(1);
        await store.enqueue("new-job", { queue: "limited", now: T });
        expect((await store.claimNext("limited", { owner: "B", ttlMs: TTL, now: T })).map((lease) => lease.job.id)).toEqual(["new-job"]);
        expect(await store.queues.get("limited")).toMatchObject({ ratePerSecond: 1, burst: 2 });
        await noteVerbs(store).enqueue("third-job", { queue: "limited", now: T }); // the bucket is empty now: two claims, burst 2
        expect(await store.claimNext("limited", { owner: "C", ttlMs: TTL, now: T })).toMatchObject({ length: 0, retryAfterMs: 1_000 });
        await store.schedules.put("hourly", { queue: "limited", everyMs: 3_600_000, now: T });
        expect((await store.schedules.list()).map((schedule) => schedule.name)).toEqual(["hourly", "nightly"]);
      } finally {
        store.close();
      }
    });
  });

  describe(`the contract, on a database migrated by main at ${commit} and opened today`, () => {
    const upgraded = async () => freshStore(undefined, await copyOf(commit, migrations));
    everyContract(upgraded);
  });
}
