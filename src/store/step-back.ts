// What the store makes of a `now` behind a time written before, in the two
// places that count from such a time: a rate limit's bucket (its last count,
// tokens_at, src/store/sql/bucket.ts) and a schedule (the `now` its next fire
// was planned at, planned_at, src/store/sql/schedules.ts). Beside each time
// the store keeps which clock wrote it (tokens_clock, planned_clock: a random
// id per LeaseStore, `clockId`), and the statements decide by it:
//
// - behind a time its own clock wrote, a clock stepped back (an NTP
//   correction), by however little or much: the time follows it, so that the
//   bucket refills and the schedule fires by the corrected clock instead of
//   waiting for the old time to come round;
// - behind a time another clock wrote, by up to SKEW_LIMIT_MS, `now` is taken
//   for a clock that runs behind that other one: the time stands and this
//   clock waits for it, so that two servers never count a token or a fire
//   twice between their clocks;
// - further behind a time another clock wrote, that clock is taken for a
//   broken one (or a store since gone, its clock with it): the time follows
//   `now`, as for a step back. Two live servers whose clocks differ by more
//   than SKEW_LIMIT_MS are outside what the store promises.

/**
 * How far behind a time another clock wrote a clock may be and still wait for
 * it (10 minutes); further behind, the time follows it. Written out in
 * migrations/0013.
 */
export const SKEW_LIMIT_MS = 10 * 60 * 1000;

/** A new clock id: one per LeaseStore, so two stores (two servers) never share one. */
export function clockId(): string {
  return crypto.randomUUID().replaceAll("-", "").slice(0, 12); // 48 random bits: short, since every claimed job row keeps it
}

/**
 * Whether a stored time `at`, written by the clock `writer`, is followed back
 * to `now` read from the clock `clock` (SQL expressions; 1 or 0, NULL when
 * `at` is): `now` is behind it, and either the same clock wrote it (a step
 * back) or it is more than SKEW_LIMIT_MS ahead (a broken or gone clock).
 */
export function followsBack(at: string, writer: string, now: string, clock: string): string {
  return `(${at} > ${now} AND (${writer} IS ${clock} OR ${at} - ${now} > ${SKEW_LIMIT_MS}))`;
}
