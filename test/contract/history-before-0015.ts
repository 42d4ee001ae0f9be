import { expect } from "vitest";
import type { Row } from "../../src/drivers/driver.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import { noteVerbs } from "../../src/store/note.ts";

// A database as the schema of migrations/0001-0012 left it, and what
// migrations/0015 must keep of it: written by the statements of that time
// (kept here as they were, less the queue limits), whose triggers recorded
// the history an event a row. Run on every driver by its migration test.

export const T = 1_000_000;
const TTL = 30_000;

/** How a migration test reaches its database: a statement with arguments, and rows out. */
export type RawDatabase = {
  exec: (sql: string, args?: unknown[]) => Promise<void>;
  rows: (sql: string, args?: unknown[]) => Promise<Row[]>;
};

/** The verbs as the store sent them before migrations/0015: each accepted write sets last_event, and the triggers of 0002-0012 record it. */
function verbsBefore0015({ exec }: RawDatabase) {
  return {
    enqueue: (id: string, now: number) =>
      exec("INSERT INTO jobs (id, queue, payload, fence, created_at, updated_at) VALUES (?1, 'q', '{\"n\":1}', (SELECT fence FROM fence_floor), ?2, ?2)", [id, now]),
    claim: (id: string, owner: string, now: number, ttl = TTL) =>
      exec(
        `UPDATE jobs SET last_error = CASE WHEN owner IS NOT NULL THEN 'the lease of ' || owner || ' expired' ELSE last_error END,
                         owner = ?2, until = ?3 + ?4, fence = fence + 1, attempts = attempts + 1, last_event = 'claimed', updated_at = ?3
         WHERE id = ?1`,
        [id, owner, now, ttl],
      ),
    renew: (id: string, now: number, progress: string | null) =>
      exec("UPDATE jobs SET until = ?2 + ?3, progress = coalesce(?4, progress), last_event = 'renewed', updated_at = ?2 WHERE id = ?1", [id, now, TTL, progress]),
    complete: (id: string, now: number, result: string) =>
      exec("UPDATE jobs SET result = ?3, done = 1, last_event = 'completed', updated_at = ?2 WHERE id = ?1", [id, now, result]),
    release: (id: string, now: number) =>
      exec("UPDATE jobs SET owner = NULL, until = 0, attempts = attempts - 1, last_event = 'released', updated_at = ?2 WHERE id = ?1", [id, now]),
    fail: (id: string, now: number, error: string, dies: boolean) =>
      exec(
        "UPDATE jobs SET owner = NULL, until = 0, last_error = ?3, dead = ?4, done = ?4, run_at = ?2, last_event = CASE WHEN ?4 THEN 'dead' ELSE 'failed' END, updated_at = ?2 WHERE id = ?1",
        [id, now, error, dies ? 1 : 0],
      ),
    retry: (id: string, now: number) =>
      exec("UPDATE jobs SET dead = 0, done = 0, attempts = 0, run_at = ?2, last_event = 'retried', updated_at = ?2 WHERE id = ?1", [id, now]),
    refuse: (id: string, action: string, owner: string, fence: number, now: number) =>
      exec(
        `INSERT INTO events (job_id, queue, at, kind, action, owner, fence, current_owner, current_fence)
         SELECT id, queue, ?5, 'refused', ?2, ?3, ?4, owner, fence FROM jobs WHERE id = ?1
         ON CONFLICT (job_id, fence, owner, action, current_fence) WHERE kind = 'refused'
         DO UPDATE SET count = count + 1, at = min(at, excluded.at), last_at = max(coalesce(last_at, at), excluded.at)`,
        [id, action, owner, fence, now],
      ),
    async cancel(id: string, by: string, reason: string, now: number) {
      await exec("UPDATE jobs SET done = 1, cancelled = 1, last_event = 'cancelled', updated_at = ?2 WHERE id = ?1", [id, now]);
      await exec("INSERT INTO events (job_id, queue, at, kind, owner, fence, error) SELECT id, queue, ?4, 'cancelled', ?2, fence, ?3 FROM jobs WHERE id = ?1", [id, by, reason, now]);
    },
    async remove(id: string, now: number) {
      await exec("INSERT INTO events (job_id, queue, at, kind, fence) SELECT id, queue, ?2, 'deleted', fence FROM jobs WHERE id = ?1", [id, now]);
      await exec("DELETE FROM jobs WHERE id = ?1", [id]);
    },
  };
}

/** What a database of 0012 holds before the migration: its events, counters and jobs, to compare with after. */
export type Before = { events: Row[]; refusalCounts: Row[]; refusalMinutes: Row[]; jobs: Row[] };

/** The columns of jobs that migrations/0015 keeps as they were (last_event aside: it names less now). */
const KEPT = "id, queue, payload, priority, run_at, owner, until, fence, result, done, attempts, max_attempts, created_at, updated_at, dead, last_error, cancelled, progress";

/**
 * Writes, on a database migrated up to 0012, a job in every part of its life
 * (done after renews and refusals, held, released and claimed again, taken
 * over once expired, dead, retried, failed, cancelled, deleted and enqueued
 * again, waiting) and answers what it holds.
 */
export async function writeHistoryBefore0015(db: RawDatabase): Promise<Before> {
  const old = verbsBefore0015(db);
  for (const id of ["done", "held", "released", "taken-over", "dead", "retried", "failed", "cancelled", "again", "waiting"]) await old.enqueue(id, T);
  await old.claim("done", "A", T);
  await old.renew("done", T + 1, '{"step":1}');
  await old.renew("done", T + 2, '{"step":2}');
  await old.refuse("done", "complete", "Z", 1, T + 3);
  await old.refuse("done", "complete", "Z", 1, T + 4);
  await old.complete("done", T + 5, '"ok"');
  await old.refuse("done", "renew", "A", 1, T + 6);
  await old.claim("held", "A", T);
  await old.renew("held", T + 1, null);
  await old.claim("released", "A", T);
  await old.release("released", T + 1);
  await old.claim("released", "B", T + 2);
  await old.claim("taken-over", "A", T, 10);
  await old.claim("taken-over", "B", T + 20);
  await old.claim("dead", "A", T);
  await old.fail("dead", T + 1, "boom", true);
  await old.claim("retried", "A", T);
  await old.fail("retried", T + 1, "boom", true);
  await old.retry("retried", T + 2);
  await old.claim("failed", "A", T);
  await old.fail("failed", T + 1, "try again", false);
  await old.claim("cancelled", "A", T);
  await old.cancel("cancelled", "ops", "not needed", T + 1);
  await old.claim("again", "A", T);
  await old.complete("again", T + 1, '"first"');
  await old.remove("again", T + 2);
  await old.enqueue("again", T + 3);
  return {
    events: await db.rows("SELECT * FROM events ORDER BY job_id, seq"),
    refusalCounts: await db.rows("SELECT * FROM refusal_counts"),
    refusalMinutes: await db.rows("SELECT * FROM refusal_minutes ORDER BY queue, minute"),
    jobs: await db.rows(`SELECT ${KEPT} FROM jobs ORDER BY id`),
  };
}

/** After migrations/0015 and those after it: the same history, event for event and seq for seq, the same counters and jobs, and the jobs counted, with the latest enqueue of the open ones (migrations/0033). */
export async function expectKeptAfter0015(db: RawDatabase, before: Before): Promise<void> {
  expect(before.events.length).toBe(36);
  expect(await db.rows("SELECT * FROM events ORDER BY job_id, seq")).toEqual(before.events);
  expect(await db.rows("SELECT * FROM refusal_counts")).toEqual(before.refusalCounts);
  expect(await db.rows("SELECT * FROM refusal_minutes ORDER BY queue, minute")).toEqual(before.refusalMinutes);
  expect(await db.rows(`SELECT ${KEPT} FROM jobs ORDER BY id`)).toEqual(before.jobs);
  expect(await db.rows("SELECT queue, open, done, dead, cancelled, enqueued_at FROM queue_counts")).toEqual([{ queue: "q", open: 7, done: 1, dead: 1, cancelled: 1, enqueued_at: T + 3 }]); // "again", enqueued anew
  // The rows now tell 18 of them (each job's enqueue; the claim of each lease held or completed, its renews and its completion); 18 stay stored.
  expect(await db.rows("SELECT count(*) AS n FROM history")).toEqual([{ n: 18 }]);
}

/** One job's history as the API tells it: kind, owner, fence, count, in order, each seq above the one before. */
async function told(store: LeaseStore, id: string): Promise<[string, string | null, number | null, number][]> {
  const { items } = await store.events(id, { limit: 100 });
  for (let i = 1; i < items.length; i++) expect(items[i]!.seq, `${id}: seqs grow`).toBeGreaterThan(items[i - 1]!.seq);
  return items.map((event) => [event.kind, event.owner, event.fence, event.count]);
}

/**
 * The store of 0015 goes on from the migrated history: a renew counts on the
 * lease's renewed event, a release stores the lease, a refusal folds into the
 * one refused before, and every new event comes after the job's old ones.
 */
export async function expectHistoryGoesOn(store: LeaseStore, before: Before): Promise<void> {
  const oldSeqs = (id: string) => before.events.filter((event) => event.job_id === id).map((event) => event.seq as number);
  const note = noteVerbs(store);
  expect(await note.renew("held", "A", 1, T + 10, TTL)).toBe(true);
  expect(await note.release("held", "A", 1, T + 11)).toBe(true);
  expect(await note.complete("done", "Z", 1, T + 12, "late")).toBe(false);
  expect(await note.complete("released", "B", 2, T + 13, '"b"')).toBe(true);
  expect(await note.fail("taken-over", "B", 2, T + 14, "boom")).toBe(true);
  expect(await note.claim("waiting", "C", T + 15, TTL)).toBe(1);
  expect(await note.claim("again", "D", T + 16, TTL)).toBe(2);

  expect(await told(store, "held")).toEqual([["enqueued", null, null, 1], ["claimed", "A", 1, 1], ["renewed", "A", 1, 2], ["released", "A", 1, 1]]);
  expect(await told(store, "done")).toEqual([
    ["enqueued", null, null, 1], ["claimed", "A", 1, 1], ["renewed", "A", 1, 2], ["refused", "Z", 1, 3], ["completed", "A", 1, 1], ["refused", "A", 1, 1],
  ]);
  expect(await told(store, "released")).toEqual([["enqueued", null, null, 1], ["claimed", "A", 1, 1], ["released", "A", 1, 1], ["claimed", "B", 2, 1], ["completed", "B", 2, 1]]);
  expect(await told(store, "taken-over")).toEqual([["enqueued", null, null, 1], ["claimed", "A", 1, 1], ["expired", "A", 1, 1], ["claimed", "B", 2, 1], ["failed", "B", 2, 1]]);
  expect(await told(store, "waiting")).toEqual([["enqueued", null, null, 1], ["claimed", "C", 1, 1]]);
  expect(await told(store, "again")).toEqual([["enqueued", null, null, 1], ["claimed", "A", 1, 1], ["completed", "A", 1, 1], ["deleted", null, 1, 1], ["enqueued", null, null, 1], ["claimed", "D", 2, 1]]);
  for (const id of ["held", "released", "taken-over", "waiting", "again"]) {
    const seqs = (await store.events(id, { limit: 100 })).items.map((event) => event.seq);
    expect(seqs.slice(0, oldSeqs(id).length), `${id}: the old events keep their seqs`).toEqual(oldSeqs(id));
  }
  expect((await store.stats({ now: T + 20 })).map(({ queue, jobs, refused }) => ({ queue, jobs, refused }))).toEqual([
    { queue: "q", jobs: { queued: 3, scheduled: 1, leased: 2, done: 2, dead: 1, cancelled: 1 }, refused: { lastHour: 4, total: 4 } },
  ]);
}
