import type { InValue } from "@libsql/client";
import type { Statement } from "../../drivers/driver.ts";
import { cancelEvents, cancelled } from "./cancel.ts";
import { removals } from "./housekeeping.ts";
import { heldBack, turnOf } from "./keys.ts";
import { NEXT_SEQ, status, STEPS } from "./lease.ts";
import { inScope } from "./reads.ts";

// Search (issue 31): the jobs a filter matches, a page at a time, and the
// bulk actions on them. Every search reads the jobs in id order from its
// cursor, the primary key's own order, and looks at no more than `scan` of
// them (SEARCH_SCAN in src/store/search.ts): a page is bounded whatever the
// filter and however few jobs match it, and a page that stops short says
// where it stopped, so that the next one goes on from there. An id prefix
// narrows that range itself; every other filter is a condition on the rows
// read, so no index is written for it (docs/search.md).
//
// The parameters every statement here shares, in this order:
//   ?1 the range's start (the cursor, or the id prefix: see `range`), ?2 its end (or null)
//   ?3 how many jobs a search looks at, at most; ?4 now; ?5 the token's queues (JSON, or null)
//   ?6 queue, ?7 statuses (JSON), ?8 key, ?9 text of lastError, ?10 createdFrom, ?11 createdTo,
//   ?12 finishedFrom, ?13 finishedTo (each null when not asked); ?14 how many matches, at most
// and a statement's own from ?15 on.

/** A search, checked: where it starts, what it matches (null: anything), and how many it answers. */
export type Search = {
  start: { from: string; inclusive: boolean; end: string | null };
  scan: number;
  now: number;
  scope: string | null;
  queue: string | null;
  statuses: string | null;
  key: string | null;
  error: string | null;
  createdFrom: number | null;
  createdTo: number | null;
  finishedFrom: number | null;
  finishedTo: number | null;
  limit: number;
};

/** The parameters ?1 to ?14 of a search. */
function searchArgs(search: Search): InValue[] {
  const { start, scan, now, scope, queue, statuses, key, error, createdFrom, createdTo, finishedFrom, finishedTo, limit } = search;
  return [start.from, start.end, scan, now, scope, queue, statuses, key, error, createdFrom, createdTo, finishedFrom, finishedTo, limit];
}

/**
 * The range of ids a search reads, as a condition the primary key seeks: from
 * ?1 (after the cursor, or from the prefix on), up to ?2 when the prefix has
 * an end. Each bound is written only when it is there, so that SQLite seeks
 * both (an `?2 IS NULL OR` would leave it reading to the table's end).
 */
function range(search: Search): string {
  return `id ${search.start.inclusive ? ">=" : ">"} ?1 AND ${search.start.end === null ? "?2 IS NULL" : "id < ?2"}`;
}

/** What a job must be to match, besides its place in the range: a condition over a row of jobs with its `status`. */
const MATCHES = `(?6 IS NULL OR queue = ?6) AND (?7 IS NULL OR status IN (SELECT value FROM json_each(?7))) AND (?8 IS NULL OR key = ?8)
  AND (?9 IS NULL OR instr(last_error, ?9) > 0)
  AND (?10 IS NULL OR created_at >= ?10) AND (?11 IS NULL OR created_at <= ?11)
  AND ((?12 IS NULL AND ?13 IS NULL) OR (done = 1 AND (?12 IS NULL OR updated_at >= ?12) AND (?13 IS NULL OR updated_at <= ?13)))
  AND ${inScope("queue", "?5")}`;

/**
 * The `columns` of the first ?14 jobs that match among the first ?3 of the
 * range, in id order. The inner SELECT, having a LIMIT, is not merged into
 * the outer one: SQLite runs it as a co-routine that hands its rows over in
 * the order it reads them (the primary key's), so the outer one stops it as
 * soon as it has its matches, and a full page of a broad filter reads about a
 * page of rows. An ORDER BY on the outer one would sort, and so read all ?3
 * first: the order is the co-routine's (the contract's tests check it).
 */
function matching(search: Search, columns: string): string {
  return `SELECT ${columns} FROM (SELECT *, ${status("?4")} AS status FROM jobs WHERE ${range(search)} ORDER BY id LIMIT ?3)
          WHERE ${MATCHES} LIMIT ?14`;
}

/** The ids `matching` answers: what the statements of a bulk action act on, each the same ones in one transaction. */
function matchingIds(search: Search): string {
  return `id IN (${matching(search, "id")})`;
}

/**
 * A page of a search: the jobs that match (each with its status at ?4), and
 * their steps (STEPS: read only for the page's jobs that have some), and
 * in every row `last_examined`, the last id the search looked at when it
 * found fewer than ?14 and stopped at its bound ?3 (else null). It is read
 * only then: a search that filled its page, or read its range to the end,
 * does not look again. With no match, one row whose job columns are null.
 */
export function page(search: Search): Statement {
  return {
    sql: `WITH page AS MATERIALIZED (${matching(search, "*")})
          SELECT jobs.*, ${STEPS} AS steps, edge.last_examined
          FROM (SELECT CASE WHEN (SELECT count(*) FROM page) < ?14
                            THEN (SELECT CASE WHEN count(*) = ?3 THEN max(id) END FROM (SELECT id FROM jobs WHERE ${range(search)} ORDER BY id LIMIT ?3)) END AS last_examined) edge
          LEFT JOIN page AS jobs ON 1
          ORDER BY jobs.id`,
    args: searchArgs(search),
  };
}

/**
 * What a bulk action's write answers of each job it changed: what wakes its
 * waiters (src/wait/wake.ts), and no more, as a chunk answers hundreds.
 */
const RETURNING_CHANGED = `RETURNING id, queue, owner, until, ${status("?4")} AS status`;

/** A job that a bulk retry takes (a condition over a jobs row): dead, or cancelled. */
const RETRYABLE = "done = 1 AND (dead = 1 OR cancelled = 1)";

/**
 * Puts back in their queues the matching jobs that are dead or cancelled, due
 * at once, their attempts reset, as `retry` (src/store/sql/housekeeping.ts)
 * does a dead one; answers them (RETURNING_CHANGED). A cancelled job may still name the holder of
 * its last lease (a cancel keeps them): that lease ends here, as a fail ends
 * one, so that its holder stays refused (owner gone: no lease of it is
 * current) and jobs_record_ended_lease stores it, ended by the retry; the
 * fence stays, and the next claim takes the one after it. The others'
 * retries are recorded first, as `retry` records one.
 */
export function retryMatching(search: Search): Statement[] {
  const which = `${matchingIds(search)} AND ${RETRYABLE}`;
  return [
    {
      sql: `INSERT INTO history (job_id, seq, queue, at, kind, owner, fence)
            SELECT id, ${NEXT_SEQ}, queue, ?4, 'retried', owner, fence FROM jobs WHERE ${which} AND owner IS NULL`,
      args: searchArgs(search),
    },
    {
      sql: `UPDATE jobs
            SET dead = 0, done = 0, cancelled = 0, superseded_by = NULL, attempts = 0, run_at = ?4, owner = NULL, until = 0, last_event = 'retried', updated_at = ?4,
                seq = iif(owner IS NULL, seq, ${NEXT_SEQ}),
                held_back = ${heldBack("jobs.queue", "jobs.key", "?4", "?4")}, turn = ${turnOf("jobs.queue", "jobs.key")}
            WHERE ${which}
            ${RETURNING_CHANGED}`,
      args: searchArgs(search),
    },
  ];
}

/**
 * Cancels the matching jobs that are not finished, as `cancel`
 * (src/store/sql/cancel.ts) cancels one: each is recorded (who, ?15, and why,
 * ?16), then done and cancelled, its owner, until and fence kept, so that its
 * holder's writes are refused from then on, reason cancelled. Answers them
 * (RETURNING_CHANGED).
 */
export function cancelMatching(search: Search, by: string, reason: string | null): Statement[] {
  const which = `${matchingIds(search)} AND done = 0`;
  return [
    { sql: cancelEvents("?15", "?16", "?4", which), args: [...searchArgs(search), by, reason] },
    { sql: `UPDATE jobs SET ${cancelled("?4")} WHERE ${which} ${RETURNING_CHANGED}`, args: searchArgs(search) },
  ];
}

/**
 * Deletes the matching jobs that are finished (done, dead or cancelled), as
 * `remove` (src/store/sql/housekeeping.ts) deletes one: their history kept,
 * their fences raising the fence floor. Answers them as they were
 * (RETURNING_CHANGED).
 */
export function removeMatching(search: Search): Statement[] {
  const [record, removal] = removals(`${matchingIds(search)} AND done = 1`, "?4", `job_id IN (${matching(search, "id")})`);
  return [
    { sql: record, args: searchArgs(search) },
    { sql: `${removal} ${RETURNING_CHANGED}`, args: searchArgs(search) },
  ];
}
