// What the store makes of a `now` behind a time it wrote before, in the two
// places that count from such a time: a rate limit's bucket (its last count,
// src/store/sql/bucket.ts) and a schedule (the `now` its next fire was
// planned at, src/store/sql/schedules.ts).
//
// A little behind, `now` is taken for the clock of another server, a little
// behind the one that wrote: the stored time stands, and that clock waits for
// it, so that two servers never count a token or a fire twice between their
// clocks. Further behind, the clock stepped back (an NTP correction): the
// stored time follows it, so that the bucket refills and the schedule fires
// by the corrected clock instead of waiting for the old time to come round.

/**
 * How far behind a stored time a clock may be and still be taken for another
 * server's (1 s); further behind, it stepped back. Written out in migrations/0013.
 */
export const STEP_BACK_MS = 1_000;
