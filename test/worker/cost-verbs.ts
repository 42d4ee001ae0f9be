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
