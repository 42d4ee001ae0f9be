import { expect } from "vitest";

// The verbs whose rows docs/cost.md tables, in its order: measured on D1 by
// test/worker/cost.test.ts and in objects mode by test/worker/objects/cost.test.ts.

/** How many jobs a batched verb carries. */
export const BATCH = 100;

/** The long poll's line: D1 mode only (in objects mode its wake is another call's write). */
export const LONG_POLL = "claim-next, long poll (looks, waits, then takes one)";

/** The lines of the D1 table of docs/cost.md, in its order. */
export const COST_VERBS = [
  "enqueue",
  "claim-next",
  "claim (by id)",
  "renew",
  "renew, again in the same lease",
  "complete",
  "purge (cron, one job)",
  `enqueueMany of ${BATCH}`,
  `claim-next of ${BATCH}`,
  `renewMany of ${BATCH}`,
  `completeMany of ${BATCH} with next (none left)`,
  `completeMany of ${BATCH} with next (takes ${BATCH})`,
  `purge (cron, ${BATCH} jobs)`,
  "refused stale write",
  "refused stale write, repeated",
  "fail (retried later)",
  "release",
  "cancel (queued)",
  "expiry (cron, one lease)",
  LONG_POLL,
  "events (read)",
  "stats (read)",
];

/**
 * The lines of the keys table of docs/cost.md (D1), in its order: a keyed
 * job's life in a queue with maxLeasedPerKey, single and batched, a job held
 * back while its key is full, and a claim that spends a token of its key's bucket.
 */
export const KEYED_VERBS = [
  "enqueue, keyed",
  "claim-next, keyed",
  "complete, keyed",
  "purge (cron, one keyed job)",
  `enqueueMany of ${BATCH} over 10 keys`,
  `claim-next of ${BATCH}, keyed`,
  `completeMany of ${BATCH}, keyed, with next (none left)`,
  `purge (cron, ${BATCH} keyed jobs)`,
  "enqueue, held back (its key full)",
  "complete, letting in the next of its key",
  "claim-next of the job let in",
  "claim-next, keyed, with keyRatePerSecond (its key's first claim)",
  "claim-next, keyed, with keyRatePerSecond (a later claim)",
  `claim-next of ${BATCH} over 10 keys, with keyRatePerSecond`,
];

/**
 * The lines of the once-per-key table of docs/cost.md (D1), in its order: an
 * enqueue with each way of holding a dedup key, the enqueues the key turns
 * away or folds, and the purge of a window that ended.
 */
export const DEDUP_VERBS = [
  "enqueue with a dedup window",
  "enqueue, deduplicated (its window lasts)",
  `enqueueMany of ${BATCH} with dedup windows`,
  "enqueue with a debounce",
  "enqueue, debounced (moves the waiting job)",
  "enqueue with supersede (the key free)",
  "enqueue with supersede (cancels the held job)",
  "purge (cron, one job and its ended window)",
];

/**
 * The lines of the steps table of docs/cost.md (D1), in its order: a step
 * recorded, the same step sent again, a stale lease's step refused, the
 * claim-next of a job with two steps recorded, and its purge.
 */
export const STEP_VERBS = [
  "step",
  "step, recorded already",
  "step, refused stale",
  "claim-next of a job with 2 steps",
  "purge (cron, one job with 2 steps)",
];

/**
 * The lines of the search table of docs/cost.md (D1), in its order: a page of
 * a search, and a bulk cancel of as many jobs as a batched verb carries.
 */
export const SEARCH_VERBS = [`search page of 50 (queue and status, ${BATCH + 1} jobs)`, `bulk cancel of ${BATCH}`];

/**
 * The lines of the series table of docs/cost.md (D1), in its order: an
 * enqueue that is its queue's first write of a new minute (it ends the minute
 * before), and the reads of a queue's last hour by the minute and its last
 * 30 days by the hour, each after a day of a job a minute.
 */
export const SERIES_VERBS = [
  "enqueue, its queue's first write of a minute",
  "series, the last hour by the minute (read)",
  "series, the last 30 days by the hour (read)",
];

/** The most rows a keyed job's life may write beyond an unkeyed one's, single and batched (issue 29). */
export const KEYED_BUDGET = 2;

/** A life of docs/cost.md's keys tables: what it writes unkeyed, and keyed. */
export type KeyedLife = { what: string; unkeyed: number; keyed: number };

/**
 * A job's life (enqueue, claim, complete, purge) unkeyed and keyed, from the
 * rows written of each line of COST_VERBS and KEYED_VERBS (`of`): on single
 * calls, by the hundred over 10 keys, held back while its key was full, and
 * each with keyRatePerSecond. A held-back job's life is its enqueue, what its
 * letting in adds to the completion before it, then a keyed job's claim,
 * completion and purge; keyRatePerSecond adds what its claim writes beyond a
 * keyed claim's.
 */
export function keyedLives(of: (verb: string) => number): KeyedLife[] {
  const unkeyed = {
    single: of("enqueue") + of("claim-next") + of("complete") + of("purge (cron, one job)"),
    batched: (of(`enqueueMany of ${BATCH}`) + of(`claim-next of ${BATCH}`) + of(`completeMany of ${BATCH} with next (none left)`) + of(`purge (cron, ${BATCH} jobs)`)) / BATCH,
  };
  const single = of("enqueue, keyed") + of("claim-next, keyed") + of("complete, keyed") + of("purge (cron, one keyed job)");
  const batched = (of(`enqueueMany of ${BATCH} over 10 keys`) + of(`claim-next of ${BATCH}, keyed`) + of(`completeMany of ${BATCH}, keyed, with next (none left)`) + of(`purge (cron, ${BATCH} keyed jobs)`)) / BATCH;
  const letIn = of("complete, letting in the next of its key") - of("complete, keyed");
  const heldBack = of("enqueue, held back (its key full)") + letIn + of("claim-next, keyed") + of("complete, keyed") + of("purge (cron, one keyed job)");
  const bucket = {
    single: of("claim-next, keyed, with keyRatePerSecond (its key's first claim)") - of("claim-next, keyed"), // both their queue's first claim: its alarm set in objects mode
    batched: (of(`claim-next of ${BATCH} over 10 keys, with keyRatePerSecond`) - of(`claim-next of ${BATCH}, keyed`)) / BATCH,
  };
  return [
    { what: "single calls", unkeyed: unkeyed.single, keyed: single },
    { what: `batched: ${BATCH} a call over 10 keys`, unkeyed: unkeyed.batched, keyed: batched },
    { what: "single calls, held back while its key was full", unkeyed: unkeyed.single, keyed: heldBack },
    { what: "single calls, with keyRatePerSecond", unkeyed: unkeyed.single, keyed: single + bucket.single },
    { what: `batched: ${BATCH} a call over 10 keys, with keyRatePerSecond`, unkeyed: unkeyed.batched, keyed: batched + bucket.batched },
    { what: "single calls, held back, with keyRatePerSecond", unkeyed: unkeyed.single, keyed: heldBack + bucket.single },
  ];
}

/** A life as its line of the keys tables: rows written unkeyed, keyed, how many more, and whether that is within KEYED_BUDGET. */
export function keyedLifeLine({ what, unkeyed, keyed }: KeyedLife): string {
  const more = Math.round((keyed - unkeyed) * 100) / 100;
  return `| ${what} | ${unkeyed} | ${keyed} | ${more} | ${more <= KEYED_BUDGET ? "yes" : "no"} |`;
}

/**
 * That `page` (docs/cost.md) has the line of each keyed life computed from
 * `of` (keyedLives), and that each setting alone keeps KEYED_BUDGET; a job
 * held back in a queue with a key rate as well writes one row more, which the
 * page says.
 */
export function expectKeyedLives(of: (verb: string) => number, page: string): void {
  const lives = keyedLives(of);
  console.log(lives.map(keyedLifeLine).join("\n"));
  for (const life of lives) expect(page).toContain(keyedLifeLine(life));
  for (const life of lives.filter(({ what }) => what !== "single calls, held back, with keyRatePerSecond")) expect(life.keyed - life.unkeyed, life.what).toBeLessThanOrEqual(KEYED_BUDGET);
}
