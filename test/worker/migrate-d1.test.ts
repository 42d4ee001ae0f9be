import { applyD1Migrations, env } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { d1Driver } from "../../src/drivers/d1.ts";
import { LeaseStore } from "../../src/store/store.ts";

const T = 1_000_000;
const TTL = 30_000;

describe("migrations on D1", () => {
  test("0012 rebuilds the events without AUTOINCREMENT: the history kept, seq for seq, and new events above it, recorded as before", async () => {
    const db = env.DB_UNMIGRATED;
    const rows = async (sql: string) => (await db.prepare(sql).all<Record<string, unknown>>()).results;
    await applyD1Migrations(db, env.TEST_MIGRATIONS.filter((m) => m.name < "0012"));
    const old = new LeaseStore(d1Driver(db));
    // Enqueued as the statement of that time did: today's enqueue writes columns of later migrations (0032).
    const enqueue = (id: string, now: number) => db.prepare("INSERT INTO jobs (id, queue, run_at, created_at, updated_at) VALUES (?1, 'q', ?2, ?2, ?2)").bind(id, now).run();
    await enqueue("job-1", T);
    await enqueue("job-2", T);
    expect(await old.claim("job-1", "A", T, TTL)).toBe(1);
    expect(await old.renew("job-1", "A", 1, T + 1, TTL)).toBe(true);
    expect(await old.renew("job-1", "A", 1, T + 2, TTL)).toBe(true);
    expect(await old.complete("job-1", "B", 1, T + 3, "stale")).toBe(false);
    expect(await old.complete("job-1", "A", 1, T + 4, "done")).toBe(true);
    const history = await rows("SELECT * FROM events ORDER BY seq");
    const refusals = await rows("SELECT * FROM refusal_counts");
    expect(history.map((event) => event.kind)).toEqual(["enqueued", "enqueued", "claimed", "renewed", "refused", "completed"]);

    await applyD1Migrations(db, env.TEST_MIGRATIONS.filter((m) => m.name < "0013"));
    expect((await rows("SELECT name FROM d1_migrations ORDER BY id")).at(-1)).toEqual({ name: "0012_events_without_autoincrement.sql" });
    expect(await rows("SELECT * FROM events ORDER BY seq")).toEqual(history);
    expect(await rows("SELECT * FROM refusal_counts")).toEqual(refusals);
    expect((await rows("SELECT sql FROM sqlite_master WHERE name = 'events'"))[0]!.sql).not.toMatch(/AUTOINCREMENT/i);

    const store = new LeaseStore(d1Driver(db));
    expect(await store.claim("job-2", "A", T + 5, TTL)).toBe(1);
    expect(await store.renew("job-2", "A", 1, T + 6, TTL)).toBe(true);
    expect(await store.renew("job-2", "A", 1, T + 7, TTL)).toBe(true);
    expect(await store.complete("job-2", "B", 1, T + 8, "stale")).toBe(false);
    expect(await store.complete("job-2", "B", 1, T + 9, "stale")).toBe(false);
    expect(await store.complete("job-2", "A", 1, T + 10, "done")).toBe(true);
    await enqueue("job-3", T + 11);
    const newer = await rows(`SELECT job_id, kind, count FROM events WHERE seq > ${Number(history.at(-1)!.seq)} ORDER BY seq`);
    expect(newer).toEqual([
      { job_id: "job-2", kind: "claimed", count: 1 },
      { job_id: "job-2", kind: "renewed", count: 2 },
      { job_id: "job-2", kind: "refused", count: 2 },
      { job_id: "job-2", kind: "completed", count: 1 },
      { job_id: "job-3", kind: "enqueued", count: 1 },
    ]);
    expect(await rows("SELECT count(*) AS n FROM events")).toEqual([{ n: history.length + newer.length }]);
    expect(await rows("SELECT queue, total FROM refusal_counts")).toEqual([{ queue: "q", total: 3 }]);
  });
});
