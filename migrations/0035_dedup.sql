-- Once per key (issue 30): a job may carry a dedup key, which its queue holds
-- for it in one of three ways, chosen at enqueue (src/store/sql/dedup.ts):
--   a window   (dedupTtlMs): while it lasts, an enqueue of the key creates
--              nothing and answers the job that holds it, whatever became of
--              that job since, even once it is purged;
--   a debounce (debounceMs): while the key's job still waits for its first
--              claim, an enqueue of the key moves it (payload, priority, run_at)
--              instead of adding one;
--   a supersede: an enqueue of the key cancels the key's job that is not
--              finished, held or not, and takes the key.
-- The statements that decide read the key's holder in dedup_keys, by primary
-- key, in the enqueue's own transaction: concurrent enqueues of one key are
-- decided one after the other, and the first creates the only job.

-- The job's key, and what it asked for: the end of its window (dedup_until),
-- or how late a debounce may move it (debounce_until, never NULL for a
-- debounced job: its run_at never goes past it). A job cancelled by a
-- supersede names the job that took its key (superseded_by), so a check of
-- its lease can say so. Written with the row the enqueue writes anyway.
ALTER TABLE jobs ADD COLUMN dedup_key TEXT;
ALTER TABLE jobs ADD COLUMN dedup_until INTEGER;
ALTER TABLE jobs ADD COLUMN debounce_until INTEGER;
ALTER TABLE jobs ADD COLUMN superseded_by TEXT;

-- Who holds each key of a queue: the latest job enqueued with it, and, for a
-- window, when the window ends (NULL: a debounce or a supersede, which hold
-- the key while the job is open). A window outlives the job when it is the
-- longer: this row is deleted by the cron once `until` has passed
-- (dedup_keys_until), the job's purge leaves it. The other rows go with
-- their job. WITHOUT ROWID: one row written, its primary key the table.
CREATE TABLE dedup_keys (
  queue     TEXT    NOT NULL,
  dedup_key TEXT    NOT NULL,
  job_id    TEXT    NOT NULL,
  until     INTEGER,
  PRIMARY KEY (queue, dedup_key)
) WITHOUT ROWID;

CREATE INDEX dedup_keys_until ON dedup_keys (until) WHERE until IS NOT NULL;

-- A job created with a dedup key takes the key: in the INSERT's own
-- transaction, for a job of `enqueue` and each of `enqueueMany` alike.
CREATE TRIGGER jobs_take_dedup_key AFTER INSERT ON jobs
WHEN new.dedup_key IS NOT NULL
BEGIN
  INSERT INTO dedup_keys (queue, dedup_key, job_id, until) VALUES (new.queue, new.dedup_key, new.id, new.dedup_until)
  ON CONFLICT (queue, dedup_key) DO UPDATE SET job_id = excluded.job_id, until = excluded.until;
END;

-- A job deleted gives back the key it holds without a window; a window stays
-- until its end.
CREATE TRIGGER jobs_give_back_dedup_key AFTER DELETE ON jobs
WHEN old.dedup_key IS NOT NULL AND old.dedup_until IS NULL
BEGIN
  DELETE FROM dedup_keys WHERE queue = old.queue AND dedup_key = old.dedup_key AND job_id = old.id;
END;
