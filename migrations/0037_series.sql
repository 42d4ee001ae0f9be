-- What each queue did, per minute and per hour (issue 31, docs/operations.md#series):
-- how many jobs were enqueued, completed, failed, expired and died, and how
-- long completed jobs waited and ran, as histograms: how many fell in each
-- bucket, wait_0 to wait_16 and run_0 to run_16 (the buckets of
-- src/store/sql/series.ts, whose edges are 5 ms to an hour). The refused
-- writes of each minute are counted already (refusal_minutes,
-- migrations/0004): they are now kept 30 days.
--
-- Kept without a row written per job. The current minute's tallies ride in the
-- queue's row of counts, which the statements that enqueue and complete
-- write anyway (src/store/sql/series.ts). A tally only adds: when it reaches
-- another minute, the trigger below moves the minute that ended into
-- queue_series and leaves in the row what the write added. So a queue's
-- minute costs a few rows, once, whatever its number of jobs. Plain integer
-- columns, not a JSON array: adding to them is what every completion does,
-- and JSON's functions made a completion cost half as much again.

-- The queue's current minute (at / 60000) and what it did so far.
ALTER TABLE queue_counts ADD COLUMN minute INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_enqueued INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_completed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_expired INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_dead INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_0 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_2 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_3 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_4 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_5 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_6 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_7 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_8 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_9 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_10 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_11 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_12 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_13 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_14 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_15 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_wait_16 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_0 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_2 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_3 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_4 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_5 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_6 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_7 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_8 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_9 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_10 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_11 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_12 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_13 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_14 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_15 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_counts ADD COLUMN minute_run_16 INTEGER NOT NULL DEFAULT 0;

-- The minutes that ended (span 1, kept 24 hours) and the hours they add up to
-- (span 60, kept 30 days), each from its first minute.
CREATE TABLE queue_series (
  queue     TEXT    NOT NULL,
  span      INTEGER NOT NULL CHECK (span IN (1, 60)),
  minute    INTEGER NOT NULL,
  enqueued INTEGER NOT NULL DEFAULT 0, completed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0, expired INTEGER NOT NULL DEFAULT 0,
  dead INTEGER NOT NULL DEFAULT 0, wait_0 INTEGER NOT NULL DEFAULT 0,
  wait_1 INTEGER NOT NULL DEFAULT 0, wait_2 INTEGER NOT NULL DEFAULT 0,
  wait_3 INTEGER NOT NULL DEFAULT 0, wait_4 INTEGER NOT NULL DEFAULT 0,
  wait_5 INTEGER NOT NULL DEFAULT 0, wait_6 INTEGER NOT NULL DEFAULT 0,
  wait_7 INTEGER NOT NULL DEFAULT 0, wait_8 INTEGER NOT NULL DEFAULT 0,
  wait_9 INTEGER NOT NULL DEFAULT 0, wait_10 INTEGER NOT NULL DEFAULT 0,
  wait_11 INTEGER NOT NULL DEFAULT 0, wait_12 INTEGER NOT NULL DEFAULT 0,
  wait_13 INTEGER NOT NULL DEFAULT 0, wait_14 INTEGER NOT NULL DEFAULT 0,
  wait_15 INTEGER NOT NULL DEFAULT 0, wait_16 INTEGER NOT NULL DEFAULT 0,
  run_0 INTEGER NOT NULL DEFAULT 0, run_1 INTEGER NOT NULL DEFAULT 0,
  run_2 INTEGER NOT NULL DEFAULT 0, run_3 INTEGER NOT NULL DEFAULT 0,
  run_4 INTEGER NOT NULL DEFAULT 0, run_5 INTEGER NOT NULL DEFAULT 0,
  run_6 INTEGER NOT NULL DEFAULT 0, run_7 INTEGER NOT NULL DEFAULT 0,
  run_8 INTEGER NOT NULL DEFAULT 0, run_9 INTEGER NOT NULL DEFAULT 0,
  run_10 INTEGER NOT NULL DEFAULT 0, run_11 INTEGER NOT NULL DEFAULT 0,
  run_12 INTEGER NOT NULL DEFAULT 0, run_13 INTEGER NOT NULL DEFAULT 0,
  run_14 INTEGER NOT NULL DEFAULT 0, run_15 INTEGER NOT NULL DEFAULT 0,
  run_16 INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, span, minute)
) WITHOUT ROWID;

-- A minute ends when a write of its queue reaches another one (a later one,
-- or one more than 10 minutes earlier: a clock set right, src/store/sql/series.ts):
-- the minute goes to its row and into its hour's, the queue's row keeps what
-- this write added (its tallies less the ended minute's), and what outlived
-- its keeping goes, counted from the earlier of the two minutes (so that a
-- write whose clock ran a day ahead deletes nothing kept). A minute with
-- nothing in it writes no row.
CREATE TRIGGER queue_counts_end_minute AFTER UPDATE OF minute ON queue_counts
WHEN new.minute <> old.minute
BEGIN
  INSERT INTO queue_series (queue, span, minute,
                            enqueued, completed, failed, expired, dead, wait_0, wait_1, wait_2, wait_3,
                            wait_4, wait_5, wait_6, wait_7, wait_8, wait_9, wait_10, wait_11, wait_12,
                            wait_13, wait_14, wait_15, wait_16, run_0, run_1, run_2, run_3, run_4, run_5,
                            run_6, run_7, run_8, run_9, run_10, run_11, run_12, run_13, run_14, run_15, run_16)
  SELECT old.queue, spans.span, old.minute - old.minute % spans.span,
         old.minute_enqueued, old.minute_completed, old.minute_failed, old.minute_expired, old.minute_dead,
         old.minute_wait_0, old.minute_wait_1, old.minute_wait_2, old.minute_wait_3, old.minute_wait_4,
         old.minute_wait_5, old.minute_wait_6, old.minute_wait_7, old.minute_wait_8, old.minute_wait_9,
         old.minute_wait_10, old.minute_wait_11, old.minute_wait_12, old.minute_wait_13, old.minute_wait_14,
         old.minute_wait_15, old.minute_wait_16, old.minute_run_0, old.minute_run_1, old.minute_run_2,
         old.minute_run_3, old.minute_run_4, old.minute_run_5, old.minute_run_6, old.minute_run_7,
         old.minute_run_8, old.minute_run_9, old.minute_run_10, old.minute_run_11, old.minute_run_12,
         old.minute_run_13, old.minute_run_14, old.minute_run_15, old.minute_run_16
  FROM (SELECT 1 AS span UNION ALL SELECT 60) AS spans
  WHERE old.minute_enqueued + old.minute_completed + old.minute_failed + old.minute_expired + old.minute_dead > 0
  ON CONFLICT (queue, span, minute) DO UPDATE SET
    enqueued = enqueued + excluded.enqueued, completed = completed + excluded.completed,
    failed = failed + excluded.failed, expired = expired + excluded.expired, dead = dead + excluded.dead,
    wait_0 = wait_0 + excluded.wait_0, wait_1 = wait_1 + excluded.wait_1, wait_2 = wait_2 + excluded.wait_2,
    wait_3 = wait_3 + excluded.wait_3, wait_4 = wait_4 + excluded.wait_4, wait_5 = wait_5 + excluded.wait_5,
    wait_6 = wait_6 + excluded.wait_6, wait_7 = wait_7 + excluded.wait_7, wait_8 = wait_8 + excluded.wait_8,
    wait_9 = wait_9 + excluded.wait_9, wait_10 = wait_10 + excluded.wait_10,
    wait_11 = wait_11 + excluded.wait_11, wait_12 = wait_12 + excluded.wait_12,
    wait_13 = wait_13 + excluded.wait_13, wait_14 = wait_14 + excluded.wait_14,
    wait_15 = wait_15 + excluded.wait_15, wait_16 = wait_16 + excluded.wait_16,
    run_0 = run_0 + excluded.run_0, run_1 = run_1 + excluded.run_1, run_2 = run_2 + excluded.run_2,
    run_3 = run_3 + excluded.run_3, run_4 = run_4 + excluded.run_4, run_5 = run_5 + excluded.run_5,
    run_6 = run_6 + excluded.run_6, run_7 = run_7 + excluded.run_7, run_8 = run_8 + excluded.run_8,
    run_9 = run_9 + excluded.run_9, run_10 = run_10 + excluded.run_10, run_11 = run_11 + excluded.run_11,
    run_12 = run_12 + excluded.run_12, run_13 = run_13 + excluded.run_13, run_14 = run_14 + excluded.run_14,
    run_15 = run_15 + excluded.run_15, run_16 = run_16 + excluded.run_16;
  UPDATE queue_counts SET
    minute_enqueued = new.minute_enqueued - old.minute_enqueued,
    minute_completed = new.minute_completed - old.minute_completed,
    minute_failed = new.minute_failed - old.minute_failed,
    minute_expired = new.minute_expired - old.minute_expired, minute_dead = new.minute_dead - old.minute_dead,
    minute_wait_0 = new.minute_wait_0 - old.minute_wait_0,
    minute_wait_1 = new.minute_wait_1 - old.minute_wait_1,
    minute_wait_2 = new.minute_wait_2 - old.minute_wait_2,
    minute_wait_3 = new.minute_wait_3 - old.minute_wait_3,
    minute_wait_4 = new.minute_wait_4 - old.minute_wait_4,
    minute_wait_5 = new.minute_wait_5 - old.minute_wait_5,
    minute_wait_6 = new.minute_wait_6 - old.minute_wait_6,
    minute_wait_7 = new.minute_wait_7 - old.minute_wait_7,
    minute_wait_8 = new.minute_wait_8 - old.minute_wait_8,
    minute_wait_9 = new.minute_wait_9 - old.minute_wait_9,
    minute_wait_10 = new.minute_wait_10 - old.minute_wait_10,
    minute_wait_11 = new.minute_wait_11 - old.minute_wait_11,
    minute_wait_12 = new.minute_wait_12 - old.minute_wait_12,
    minute_wait_13 = new.minute_wait_13 - old.minute_wait_13,
    minute_wait_14 = new.minute_wait_14 - old.minute_wait_14,
    minute_wait_15 = new.minute_wait_15 - old.minute_wait_15,
    minute_wait_16 = new.minute_wait_16 - old.minute_wait_16,
    minute_run_0 = new.minute_run_0 - old.minute_run_0, minute_run_1 = new.minute_run_1 - old.minute_run_1,
    minute_run_2 = new.minute_run_2 - old.minute_run_2, minute_run_3 = new.minute_run_3 - old.minute_run_3,
    minute_run_4 = new.minute_run_4 - old.minute_run_4, minute_run_5 = new.minute_run_5 - old.minute_run_5,
    minute_run_6 = new.minute_run_6 - old.minute_run_6, minute_run_7 = new.minute_run_7 - old.minute_run_7,
    minute_run_8 = new.minute_run_8 - old.minute_run_8, minute_run_9 = new.minute_run_9 - old.minute_run_9,
    minute_run_10 = new.minute_run_10 - old.minute_run_10,
    minute_run_11 = new.minute_run_11 - old.minute_run_11,
    minute_run_12 = new.minute_run_12 - old.minute_run_12,
    minute_run_13 = new.minute_run_13 - old.minute_run_13,
    minute_run_14 = new.minute_run_14 - old.minute_run_14,
    minute_run_15 = new.minute_run_15 - old.minute_run_15,
    minute_run_16 = new.minute_run_16 - old.minute_run_16
  WHERE queue = new.queue;
  DELETE FROM queue_series WHERE queue = new.queue AND span = 1 AND minute < min(old.minute, new.minute) - 1440;
  DELETE FROM queue_series WHERE queue = new.queue AND span = 60 AND minute < min(old.minute, new.minute) - 43200;
END;

-- A failed or expired lease the job will retry is tallied from the history
-- row that stores it: one row more a lease, off the happy path.
CREATE TRIGGER history_tally_ended_lease AFTER INSERT ON history WHEN new.kind IN ('failed', 'expired')
BEGIN
  INSERT INTO queue_counts (queue, minute, minute_failed, minute_expired)
  VALUES (new.queue, CAST(new.at AS INTEGER) / 60000, new.kind = 'failed', new.kind = 'expired')
  ON CONFLICT (queue) DO UPDATE SET
    minute = CASE WHEN excluded.minute > minute OR excluded.minute < minute - 10 THEN excluded.minute ELSE minute END,
    minute_failed = minute_failed + excluded.minute_failed, minute_expired = minute_expired + excluded.minute_expired;
END;

-- The refusals per queue and minute of migrations/0015, kept 30 days where
-- they were kept an hour: the series read them as they are, so a refusal
-- writes what it wrote (its minute's row, as before, and the rows that fell
-- out of its queue's 30 days, one each, as before after an hour).
DROP TRIGGER history_count_refusal;
CREATE TRIGGER history_count_refusal AFTER INSERT ON history WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, 1)
  ON CONFLICT (queue) DO UPDATE SET total = total + 1;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.at / 60000, 1)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + 1;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.at / 60000 - 43200;
END;
DROP TRIGGER history_count_folded_refusal;
CREATE TRIGGER history_count_folded_refusal AFTER UPDATE OF count ON history WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, new.count - old.count)
  ON CONFLICT (queue) DO UPDATE SET total = total + excluded.total;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.last_at / 60000, new.count - old.count)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + excluded.refusals;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.last_at / 60000 - 43200;
END;

-- A death is tallied where migrations/0015 counts it, in the same row write:
-- the moves between counted states, now with the minute's dead.
DROP TRIGGER jobs_count_moves;
CREATE TRIGGER jobs_count_moves AFTER UPDATE OF done, dead, cancelled ON jobs
WHEN (old.done <> new.done OR old.dead <> new.dead OR old.cancelled <> new.cancelled)
 AND NOT (old.done = 0 AND new.done = 1 AND new.dead = 0 AND new.cancelled = 0)
BEGIN
  INSERT INTO queue_counts (queue, open, done, dead, cancelled, minute, minute_dead)
  VALUES (new.queue, (new.done = 0) - (old.done = 0),
          (new.done = 1 AND new.dead = 0 AND new.cancelled = 0) - (old.done = 1 AND old.dead = 0 AND old.cancelled = 0),
          new.dead - old.dead, new.cancelled - old.cancelled,
          CAST(new.updated_at AS INTEGER) / 60000, new.dead > old.dead)
  ON CONFLICT (queue) DO UPDATE SET
    open = open + excluded.open, done = done + excluded.done, dead = dead + excluded.dead, cancelled = cancelled + excluded.cancelled,
    minute = CASE WHEN excluded.minute > minute OR excluded.minute < minute - 10 THEN excluded.minute ELSE minute END,
    minute_dead = minute_dead + excluded.minute_dead;
END;
