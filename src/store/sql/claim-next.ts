import type { InValue } from "@libsql/client";
import type { Statement } from "../../drivers/driver.ts";
import { followedBack, refilled, TOKEN, tokenDueAt, wholeTokens } from "./bucket.ts";
import { CLAIM, claimed, due, EXHAUSTED, expire, returningJob, status } from "./lease.ts";
import { keyBucket as keyBucketOf, keyRoom, keyTables, leasesOfKey, turnWaiting } from "./keys.ts";

// The claims, and everything that decides one. A claim is one UPDATE that
// picks its jobs and takes their leases in the same statement, so two
// claimers can never take one job; a job it does not take is left as it is.
//
// What decides a claim, in the order the statements ask:
// - the job: not done (nor dead, nor cancelled), and no lease in force
//   (`until <= now`; at `now == until` the old lease has ended). A claim by id
//   ends an expired lease first (`expire`); claim-next takes one over, unless
//   it was the job's last attempt, which is left for `expire` to make dead.
// - due (claim-next only): `run_at <= now`, or its run_at had come when it
//   was enqueued, whatever the clock read since (`due` in sql/lease.ts; seen
//   up to `dueUpTo`). A claim by id takes a job before its time.
// - priority (claim-next only): the highest first, then the job due longest,
//   then the oldest, then by id (`takeNext`).
// - the queue (`room`, migrations/0008 and 0009): none while it is paused, no
//   more than its maxLeased less its current leases, and no more than the
//   whole tokens its bucket holds (src/store/sql/bucket.ts; a trigger spends
//   them in the same statement, reading the claim's clock from `claim_clock`,
//   migrations/0013). A claim refused for want of a token after the clock
//   stepped back is followed by `followClock` (bucket.ts), which the store
//   sends after it.
// The reads at the end decide nothing: when a waiting claim should look again
// (`nextClaimable`, `retryAfter`), and why a claim by id was refused (`claimState`).

/**
 * The current leases of `queue` (an SQL expression) at `now`: a range of
 * jobs_held_by_until (migrations/0004), so a lease is counted until `now == until`.
 */
export function currentLeases(queue: string, now: string): string {
  return `(SELECT count(*) FROM jobs WHERE queue = ${queue} AND done = 0 AND owner IS NOT NULL AND until > ${now})`;
}

/**
 * The jobs of `queue` in jobs_claim_waiting (migrations/0034): nobody holds
 * them, let in by their key, and without a turn (the jobs of a fair queue's
 * keys are in jobs_turn_waiting).
 */
function waitingIn(queue: string): string {
  return `queue = ${queue} AND done = 0 AND owner IS NULL AND held_back = 0 AND turn IS NULL`;
}

/**
 * Up to what run_at (an SQL expression) the jobs of `queue` waiting at `now`
 * may be due: `now`, or the highest `now` an enqueue of the queue has read
 * (queue_counts.enqueued_at, migrations/0033) while the clock is behind it,
 * since a job due when it was enqueued has its run_at at its enqueue's time
 * or before. It ends the claims' range of jobs_claim_waiting along run_at,
 * one primary-key lookup a statement. The range reaches past `now` only while
 * the clock is behind an enqueue (stepped back, or behind another server's);
 * the jobs due later that it then passes over are turned down on their index
 * entries alone (see `due`).
 */
function dueUpTo(queue: string, now: string): string {
  return `coalesce((SELECT max(enqueued_at, ${now}) FROM queue_counts WHERE queue = ${queue}), ${now})`;
}

/** The waiting jobs of `queue` due at `now` (SQL expressions): a range of jobs_claim_waiting up to `dueUpTo`, filtered by `due`. */
function dueWaiting(queue: string, now: string): string {
  return `run_at <= ${dueUpTo(queue, now)} AND ${due(now)} AND until <= ${now}`;
}

/** The held jobs of `queue` whose lease ended at `now` and that are due, but not on their last attempt (which `expire` makes dead): a range of jobs_held_by_until. */
function endedDue(queue: string, now: string): string {
  return `queue = ${queue} AND done = 0 AND owner IS NOT NULL AND until <= ${now} AND ${due(now)} AND NOT (${EXHAUSTED})`;
}

/**
 * How many leases a claim may hand out in `queue` (an SQL expression) at
 * `now`, at most `limit`: none while the queue is paused, no more than its
 * maxLeased less its current leases (migrations/0008), and no more than the
 * whole tokens its bucket holds at `now` (migrations/0009, whose trigger
 * spends them in the same statement). A queue without settings is one
 * primary-key lookup; its leases are not counted, nor its tokens.
 */
function room(queue: string, now: string, limit: string): string {
  return `coalesce((SELECT CASE WHEN s.paused = 1 THEN 0
                                ELSE max(0, min(${limit},
                                  CASE WHEN s.max_leased IS NULL THEN ${limit} ELSE s.max_leased - ${currentLeases("s.queue", now)} END,
                                  CASE WHEN s.refill_per_ms IS NULL THEN ${limit} ELSE ${wholeTokens("s.", now)} END)) END
                    FROM queues s WHERE s.queue = ${queue}), ${limit})`;
}

/** A job of an ordered key that waits behind its key's earlier jobs (held back): not even a claim by id takes it. */
const ORDERED_BEHIND = "(jobs.held_back = 1 AND coalesce((SELECT s.ordered_by_key FROM queues s WHERE s.queue = jobs.queue), 0) = 1)";

/**
 * Takes the lease of one job if nobody holds it: a new owner and the next
 * fence; not while its queue is paused, has its maxLeased current leases, or
 * has no whole token in its bucket, nor while its key has no room (its
 * maxLeasedPerKey current leases, no whole token in its bucket) or, in an
 * ordered queue, earlier jobs to run first. Answers the job as now held. `clock` is
 * the store's clock id, which migrations/0013's trigger reads from
 * `claim_clock` (src/store/step-back.ts).
 */
export function claim(id: string, owner: string, now: number, ttlMs: number, clock: string): Statement[] {
  return [
    expire(now, id),
    {
      sql: `WITH ${keyTables("(SELECT queue FROM jobs WHERE id = ?1)", "?3")}
            UPDATE jobs
            SET ${CLAIM}, claim_clock = ?5
            WHERE id = ?1 AND done = 0 AND until <= ?3 AND ${room("jobs.queue", "?3", "1")} > 0
              AND ${keyRoom("jobs.queue", "jobs.key", "?3", "1")} > 0 AND NOT ${ORDERED_BEHIND}
            ${returningJob("?3")}`,
      args: [id, owner, now, ttlMs, clock],
    },
  ];
}

/**
 * Takes the leases of the next due jobs of a queue, in claim order, as one
 * statement. An expired lease is taken over (its expiry recorded), unless it
 * was the job's last attempt: that job is left for `expire` to make dead.
 */
export function claimNext(queue: string, owner: string, now: number, ttlMs: number, limit: number, clock: string): Statement[] {
  return [takeNext("?1", "", [queue, owner, now, ttlMs, limit, clock])];
}

/**
 * The claim-next that follows a complete or fail of job `id` (the next jobs of
 * its queue, for the same owner, in the same batch): it takes nothing unless
 * the write before it was accepted. The refusal record just before it wrote
 * no row (`changes() = 0`) exactly when the write was accepted, or when the job
 * does not exist, which the second condition rules out.
 */
export function claimNextAfter(id: string, owner: string, now: number, take: { limit: number; ttlMs: number; clock: string }, accepted = "changes() = 0 AND EXISTS (SELECT 1 FROM jobs WHERE id = ?1)"): Statement {
  return takeNext("(SELECT queue FROM jobs WHERE id = ?1)", `AND ${accepted}`, [id, owner, now, take.ttlMs, take.limit, take.clock]);
}

/** The claim-next that follows a complete, placed just after its count of the done job (sql/lease.ts complete): that count changed a row exactly when the completion was accepted. */
export function claimNextAfterCompletion(id: string, owner: string, now: number, take: { limit: number; ttlMs: number; clock: string }): Statement {
  return claimNextAfter(id, owner, now, take, "changes() = 1");
}

/** Who holds the leases that push deliveries carry (src/push/): the owner their endpoint renews, completes or fails with. */
export const PUSH_OWNER = "push";

/** How much longer than its request's timeout a pushed lease lasts: the time to write the answer's outcome. */
export const PUSH_SETTLE_MS = 5_000;

/**
 * The claim-next of push delivery: as claimNext, for PUSH_OWNER, each lease
 * lasting the queue's push timeout plus PUSH_SETTLE_MS, and besides at most
 * its max_in_flight (push_endpoints, migrations/0031) current leases of that
 * owner, counted in jobs_held_by_until: a lease whose endpoint answered 202
 * counts until it ends. A queue without an endpoint gives none.
 */
export function claimToPush(queue: string, now: number, limit: number, clock: string): Statement {
  const endpoint = "FROM push_endpoints p WHERE p.queue = ?1";
  const pushed = "queue = p.queue AND done = 0 AND owner IS NOT NULL AND owner = ?2 AND until > ?3";
  return takeNext("?1", "", [queue, PUSH_OWNER, now, null, limit, clock], {
    ttl: `(SELECT p.timeout_ms + ${PUSH_SETTLE_MS} ${endpoint})`,
    cap: `coalesce((SELECT p.max_in_flight - (SELECT count(*) FROM jobs WHERE ${pushed}) ${endpoint}), 0)`,
  });
}

/**
 * The one claim-next statement: `queue` an SQL expression over ?1, `guard` a
 * further condition; ?2 owner, ?3 now, ?4 ttl, ?5 limit, ?6 the store's clock id.
 * `push` (claimToPush only) puts an SQL expression in place of the ttl, and
 * caps the leases taken.
 *
 * Its candidates are read so that their cost does not grow with the jobs it
 * must pass over (migrations/0006): the jobs nobody holds, priority by
 * priority from the highest (`level`: each step seeks the next priority down,
 * and counts, up to the limit, the due jobs of the one before, so it stops
 * once it has enough), seeking at each priority straight to the due ones (a
 * range along run_at up to `dueUpTo`); and the held jobs whose lease has
 * ended, from the index of lease ends. Of those,
 * the first in claim order, as many as the queue has room for (`room`: none
 * while it is paused, up to its maxLeased and its whole tokens), at most
 * `limit`. Its `updated_at = now` is when migrations/0009's trigger spends
 * the tokens of the leases it hands out, and `claim_clock` the clock that
 * read it (migrations/0013). A claim changes no count: held jobs are counted
 * from jobs_held_by_until.
 */
function takeNext(queue: string, guard: string, args: InValue[], push?: { ttl: string; cap: string }): Statement {
  const shape = push ? `${queue}\n${guard}\n${push.ttl}\n${push.cap}` : `${queue}\n${guard}`;
  let sql = takeNextTexts.get(shape);
  if (sql === undefined) takeNextTexts.set(shape, (sql = takeNextText(queue, guard, push)));
  return { sql, args };
}

// The text of `takeNext` is about 8 KB: building it on every claim, then
// flattening and hashing the new string for the file driver's statement cache,
// took over a quarter of a claim-next's CPU through the store (83 µs a claim,
// 60 without; a loop of 4,000 on a libSQL file). So each is built once: its
// queue expression, guard and push are texts of this module, never a caller's
// value, and few (claimNext, claimNextAfter twice, claimToPush).
const takeNextTexts = new Map<string, string>();

/** The SQL of `takeNext`, as built for its shape. */
function takeNextText(queue: string, guard: string, push?: { ttl: string; cap: string }): string {
  const waiting = waitingIn(queue);
  const dueNow = dueWaiting(queue, "?3");
  const keyOk = `${keyRoom(queue, "jobs.key", "?3", "1")} > 0`;
  return `WITH RECURSIVE ${keyTables(queue, "?3")},
          level(priority, before) AS (
            SELECT (SELECT priority FROM jobs WHERE ${waiting} ORDER BY priority DESC LIMIT 1), 0
            UNION ALL
            SELECT (SELECT priority FROM jobs WHERE ${waiting} AND priority < level.priority ORDER BY priority DESC LIMIT 1),
                   before + (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE ${waiting} AND priority = level.priority AND ${dueNow} LIMIT ?5))
            FROM level WHERE level.priority IS NOT NULL AND before < ?5),
          candidate AS (
            SELECT * FROM (
              SELECT id, priority, turn, run_at, created_at, key FROM jobs
              WHERE ${waiting} AND priority IN (SELECT priority FROM level WHERE before < ?5) AND ${dueNow} AND ${keyOk}
              ORDER BY priority DESC, run_at, created_at, id LIMIT ?5)
            UNION ALL
            SELECT * FROM (
              SELECT id, priority, turn, run_at, created_at, key FROM jobs
              WHERE ${turnWaiting("", queue)} AND ${dueNow} AND ${keyOk}
              ORDER BY priority DESC, turn, run_at, created_at, id LIMIT ?5)
            UNION ALL
            SELECT id, priority, turn, run_at, created_at, key FROM jobs WHERE ${endedDue(queue, "?3")} AND ${keyOk}),
          ranked AS (
            SELECT id, priority, turn, run_at, created_at,
                   row_number() OVER (PARTITION BY key ORDER BY priority DESC, turn, run_at, created_at, id) AS nth,
                   ${keyRoom(queue, "candidate.key", "?3", "?5")} AS key_room
            FROM candidate WHERE true ${guard})
          UPDATE jobs
          SET last_error = CASE WHEN owner IS NOT NULL THEN 'the lease of ' || owner || ' expired' ELSE last_error END, ${push ? claimed(push.ttl) : CLAIM}, claim_clock = ?6
          WHERE id IN (
            SELECT id FROM ranked WHERE nth <= key_room
            ORDER BY priority DESC, turn, run_at, created_at, id
            LIMIT ${push ? `min(${room(queue, "?3", "?5")}, max(0, ${push.cap}))` : room(queue, "?3", "?5")})
          ${returningJob("?3")}`;
}

/**
 * `aggregate` over the priorities of `queue`'s waiting jobs (`waiting_priority`
 * in it: one row each, highest first), as a scalar: the priorities are found
 * one seek each in jobs_claim_waiting (queue, priority, run_at), the only
 * index of the waiting jobs (migrations/0015), so that what the aggregate
 * asks by run_at is a range of each priority, never a walk over a backlog.
 */
export function overWaitingPriorities(queue: string, aggregate: string): string {
  const waiting = waitingIn(queue);
  return `(WITH RECURSIVE waiting_priority(priority) AS (
             SELECT (SELECT priority FROM jobs WHERE ${waiting} ORDER BY priority DESC LIMIT 1)
             UNION ALL
             SELECT (SELECT priority FROM jobs WHERE ${waiting} AND priority < waiting_priority.priority ORDER BY priority DESC LIMIT 1)
             FROM waiting_priority WHERE waiting_priority.priority IS NOT NULL)
           SELECT ${aggregate} FROM waiting_priority WHERE waiting_priority.priority IS NOT NULL)`;
}

/** The waiting jobs of `queue` at one of the priorities of `overWaitingPriorities`, and `more`: a range of jobs_claim_waiting. */
export function waitingAt(queue: string, more: string): string {
  return `${waitingIn(queue)} AND priority = waiting_priority.priority ${more}`;
}

/**
 * When a job of each of `queues` next becomes claimable by `takeNext`: the
 * earliest run_at of a job nobody holds (`now` if one is `due` before its
 * run_at), or the earliest end of a lease that is not its job's last attempt
 * (one row per queue; `at` null when there is none). The jobs of a fair
 * queue's keys are in claim order by turn, not run_at: when none is due, their
 * earliest run_at is read from all of them (migrations/0034). What a waiting claim
 * sleeps until, and what the wait rooms' re-check reads for every queue with
 * waiters at once; for each queue, a seek a priority (and a range up to
 * `dueUpTo`), and a range of the lease ends, each read once (`parts`).
 * Never while the queue is paused (null: a resume rings);
 * while it has its maxLeased current leases, not before the first of them ends
 * (migrations/0008); and not before its bucket holds a whole token (migrations/0009),
 * by the clock `clock` that read `now`.
 */
export function nextClaimable(queues: string[], now: number, clock: string): Statement {
  const held = "queue = w.queue AND done = 0 AND owner IS NOT NULL";
  return {
    sql: `WITH w(queue) AS (SELECT DISTINCT value FROM json_each(?1)),
          parts(queue, free, turns, ended) AS MATERIALIZED (
            SELECT w.queue,
                   ${overWaitingPriorities("w.queue", `min(CASE WHEN EXISTS (SELECT 1 FROM jobs WHERE ${waitingAt("w.queue", `AND run_at > ?2 AND ${dueWaiting("w.queue", "?2")}`)}) THEN ?2
                                                                ELSE (SELECT max(run_at, until) FROM jobs WHERE ${waitingAt("w.queue", "")} ORDER BY run_at LIMIT 1) END)`)},
                   CASE WHEN EXISTS (SELECT 1 FROM jobs WHERE ${turnWaiting("", "w.queue")} AND ${dueWaiting("w.queue", "?2")}) THEN ?2
                        ELSE (SELECT min(max(run_at, until)) FROM jobs WHERE ${turnWaiting("", "w.queue")}) END,
                   (SELECT CASE WHEN ${due("until")} THEN until ELSE run_at END FROM jobs WHERE ${held} AND NOT (${EXHAUSTED}) ORDER BY until LIMIT 1)
            FROM w),
          n(queue, at) AS MATERIALIZED (SELECT queue, (SELECT min(part) FROM (SELECT free AS part UNION ALL SELECT turns UNION ALL SELECT ended)) FROM parts)
          SELECT n.queue,
                 CASE WHEN s.paused = 1 OR n.at IS NULL THEN NULL
                      ELSE max(n.at,
                               CASE WHEN s.max_leased <= ${currentLeases("n.queue", "?2")}
                                    THEN (SELECT min(until) FROM jobs WHERE queue = n.queue AND done = 0 AND owner IS NOT NULL AND until > ?2) ELSE n.at END,
                               coalesce(${tokenDueAt("s.", "?2", "?3")}, n.at)) END AS at
          FROM n LEFT JOIN queues s ON s.queue = n.queue`,
    args: [JSON.stringify(queues), now, clock],
  };
}

/**
 * When a pushed queue next has a job for its push claim: when a job is next
 * claimable (`nextClaimable`), and, while its maxInFlight pushed leases are
 * all held (deliveries on their way, 202s not yet ended, of any process), not
 * before the first of them ends; null when none will be; no row for a queue
 * without an endpoint. What the Node dispatcher sleeps until when its claim
 * took nothing, and what a queue's object arms its alarm for: a backoff or a
 * Retry-After at its time, a slot when the lease holding it runs out.
 */
export function nextToPush(queue: string, now: number, clock: string): Statement {
  const next = nextClaimable([queue], now, clock);
  const pushed = "FROM jobs WHERE queue = p.queue AND done = 0 AND owner IS NOT NULL AND owner = ?4 AND until > ?2";
  return {
    sql: `SELECT CASE WHEN n.at IS NULL OR (SELECT count(*) ${pushed}) < p.max_in_flight THEN n.at
                      ELSE max(n.at, (SELECT min(until) ${pushed})) END AS at
          FROM (${next.sql}) n JOIN push_endpoints p ON p.queue = n.queue`,
    args: [...next.args, PUSH_OWNER],
  };
}

/** The queue's row `s` (at ?2) has its maxLeased current leases: no token would let a claim through. */
const FULL = `(s.max_leased IS NOT NULL AND ${currentLeases("s.queue", "?2")} >= s.max_leased)`;

/** How many due keyed jobs `retryAfter` looks at for the keys whose buckets held them back. */
const KEYS_LOOKED_AT = 100;

/**
 * In how many ms a claim-next of `queue` at `now` may take a job, when a rate
 * limit is what held it back: the queue's (it has a rate, is not paused, not
 * full, its bucket holds no whole token, and a job is due), or its keys' (the
 * first due jobs let in have keys whose buckets hold no whole token: when the
 * first of them next holds one); the later of the two. With whether a count is followed back to `now` read from `clock`
 * (`stepped_back`: see `followClock`, `followKeyClocks`). One row, or none; a
 * queue without settings is one primary-key lookup. With `limit`, it is sent
 * in the claim's batch, just after it: it reads nothing when the claim took `limit`.
 */
export function retryAfter(queue: string, now: number, clock: string, limit?: number): Statement {
  const anyDue = `${overWaitingPriorities("?1", `max(EXISTS (SELECT 1 FROM jobs WHERE ${waitingAt("?1", `AND ${dueWaiting("?1", "?2")}`)}))`)} = 1
                  OR EXISTS (SELECT 1 FROM jobs WHERE ${endedDue("?1", "?2")})`;
  const short = limit === undefined ? "" : "changes() < ?4 AND";
  const keyBucket = keyBucketOf("s", "b");
  // The keys of the first due jobs let in: of those, the ones whose buckets hold no whole token held the claim back.
  const dueKeys = `SELECT key FROM jobs WHERE queue = ?1 AND done = 0 AND owner IS NULL AND held_back = 0 AND key IS NOT NULL AND ${due("?2")} LIMIT ${KEYS_LOOKED_AT}`;
  return {
    sql: `SELECT ms, stepped_back FROM (
            SELECT ${tokenDueAt("s.", "?2", "?3")} - ?2 AS ms, ${followedBack("s.", "?2", "?3")} AS stepped_back FROM queues s
            WHERE ${short} s.queue = ?1 AND s.refill_per_ms IS NOT NULL AND s.paused = 0 AND NOT ${FULL}
              AND ${refilled("s.", "?2")} < ${TOKEN} AND (${anyDue})
            UNION ALL
            SELECT min(${tokenDueAt(keyBucket, "?2", "?3")}) - ?2, max(${followedBack(keyBucket, "?2", "?3")})
            FROM queues s JOIN key_buckets b ON b.queue = s.queue
            WHERE ${short} s.queue = ?1 AND s.key_refill_per_ms IS NOT NULL AND s.paused = 0 AND NOT ${FULL}
              AND b.key IN (${dueKeys}) AND ${refilled(keyBucket, "?2")} < ${TOKEN})
          WHERE ms IS NOT NULL ORDER BY ms DESC LIMIT 1`,
    args: limit === undefined ? [queue, now, clock] : [queue, now, clock, limit],
  };
}

/**
 * A job as `state` reads it, what of its queue refuses a claim now
 * (`queue_refusal`: paused, full, rate_limited, or null), and what of its key
 * (`key_refusal`: key_ordered, key_full, key_rate_limited, or null), with the
 * job of its key let in first (`key_first`): why a claim by id was refused,
 * read only after it was.
 */
export function claimState(id: string, now: number): Statement {
  const keyFirst = `(SELECT o.id FROM jobs o WHERE o.queue = jobs.queue AND o.key = jobs.key AND o.done = 0 AND o.held_back = 0 AND o.id <> jobs.id
                     ORDER BY o.priority DESC, o.created_at, o.place, o.id LIMIT 1)`;
  return {
    sql: `WITH ${keyTables("(SELECT queue FROM jobs WHERE id = ?1)", "?2")}
          SELECT *, ${status("?2")} AS status,
                 (SELECT CASE WHEN s.paused = 1 THEN 'paused' WHEN ${FULL} THEN 'full' WHEN ${refilled("s.", "?2")} < ${TOKEN} THEN 'rate_limited' END
                  FROM queues s WHERE s.queue = jobs.queue) AS queue_refusal,
                 (SELECT CASE WHEN jobs.key IS NULL THEN NULL
                              WHEN s.ordered_by_key = 1 AND (jobs.held_back = 1 OR ${leasesOfKey("jobs.queue", "jobs.key", "?2")} > 0) THEN 'key_ordered'
                              WHEN s.max_leased_per_key <= ${leasesOfKey("jobs.queue", "jobs.key", "?2")} THEN 'key_full'
                              WHEN ${keyRoom("jobs.queue", "jobs.key", "?2", "1")} = 0 THEN 'key_rate_limited' END
                  FROM queues s WHERE s.queue = jobs.queue) AS key_refusal,
                 ${keyFirst} AS key_first
          FROM jobs WHERE id = ?1`,
    args: [id, now],
  };
}
