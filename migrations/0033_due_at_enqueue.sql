-- A job enqueued without a delay is due at once, whatever the clock reads
-- later (issue 28): its run_at is the enqueue's `now`, and one enqueued while
-- the server's clock was an hour ahead waited an hour for claim-next after
-- NTP set the clock back. A job whose run_at had come when it was enqueued
-- (run_at <= created_at) is now due at any time (`due` in src/store/sql/lease.ts).
--
-- The claims seek the due jobs as a range of jobs_claim_waiting along run_at,
-- and that range needs an end: `now`, or, while the clock is behind the
-- highest time an enqueue of the queue read, that time, up to which such jobs
-- may lie. This column keeps it, written by each enqueue in the row of counts
-- it writes anyway (no row more), and read by the claims by primary key.
-- NULL: no enqueue since this migration, and no open job before it.
ALTER TABLE queue_counts ADD COLUMN enqueued_at INTEGER;

-- The jobs already waiting, enqueued by the code before: the latest enqueue of
-- each queue that has open jobs.
UPDATE queue_counts SET enqueued_at = open_jobs.latest
FROM (SELECT queue, max(created_at) AS latest FROM jobs WHERE done = 0 GROUP BY queue) AS open_jobs
WHERE open_jobs.queue = queue_counts.queue;
