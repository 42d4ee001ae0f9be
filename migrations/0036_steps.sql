-- Fenced steps (issue 30): a job's handler records named steps, each under the
-- lease current when it is recorded, and every later lease of the job is
-- handed them back (src/store/sql/steps.ts).
--
-- The counts of a job's steps and of the bytes of their results (JSON text)
-- ride in its row, not indexed: the statement that records a step decides
-- the limits (64 steps, 65,536 bytes a job) and the current lease on the row
-- it writes anyway, and a claim reads the steps only of a job that has some.
ALTER TABLE jobs ADD COLUMN step_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN step_bytes INTEGER NOT NULL DEFAULT 0;

-- One row a step recorded: its result as JSON text, the fence of the lease
-- that recorded it, and when. A step is recorded once: never replaced.
CREATE TABLE steps (
  job_id TEXT    NOT NULL,
  name   TEXT    NOT NULL,
  result TEXT    NOT NULL,
  fence  INTEGER NOT NULL,
  at     INTEGER NOT NULL,
  PRIMARY KEY (job_id, name)
) WITHOUT ROWID;

-- A job's steps go with it (a delete, a purge), so that an id enqueued again
-- starts with none; a job that recorded none costs the purge nothing more.
CREATE TRIGGER jobs_delete_steps AFTER DELETE ON jobs WHEN old.step_count > 0
BEGIN
  DELETE FROM steps WHERE job_id = old.id;
END;
