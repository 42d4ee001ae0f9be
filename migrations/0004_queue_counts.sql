-- The stats read a few rows per queue, whatever the history: counts kept by
-- the transitions themselves, in the same statement, and index ranges for
-- what depends on the time asked (see `stats` in src/store/sql/lease.ts).

-- Jobs per queue by stored state, which does not change with time:
--   waiting  not done, nobody holds it (queued, or scheduled: run_at ahead)
--   held     not done, an owner (leased, or its lease expired and not yet ended)
--   done     completed
--   dead     failed or expired on its last attempt (a dead job is also done = 1)
-- A queue with no job has no row.
CREATE TABLE queue_counts (
  queue   TEXT    PRIMARY KEY,
  waiting INTEGER NOT NULL DEFAULT 0,
  held    INTEGER NOT NULL DEFAULT 0,
  done    INTEGER NOT NULL DEFAULT 0,
  dead    INTEGER NOT NULL DEFAULT 0
);

INSERT INTO queue_counts (queue, waiting, held, done, dead)
SELECT queue, sum(done = 0 AND owner IS NULL), sum(done = 0 AND owner IS NOT NULL), sum(done = 1 AND dead = 0), sum(dead = 1)
FROM jobs GROUP BY queue;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs
BEGIN
  INSERT INTO queue_counts (queue, waiting, held, done, dead)
  VALUES (new.queue, new.done = 0 AND new.owner IS NULL, new.done = 0 AND new.owner IS NOT NULL, new.done = 1 AND new.dead = 0, new.dead = 1)
  ON CONFLICT (queue) DO UPDATE SET
    waiting = waiting + excluded.waiting, held = held + excluded.held, done = done + excluded.done, dead = dead + excluded.dead;
END;

-- A transition within a queue moves one job from its old state to its new one
-- (a renew changes none of these columns, so it costs nothing here).
CREATE TRIGGER jobs_count_move AFTER UPDATE OF owner, done, dead ON jobs
WHEN old.queue = new.queue
 AND (old.done <> new.done OR old.dead <> new.dead OR (old.owner IS NULL) <> (new.owner IS NULL))
BEGIN
  UPDATE queue_counts SET
    waiting = waiting - (old.done = 0 AND old.owner IS NULL) + (new.done = 0 AND new.owner IS NULL),
    held = held - (old.done = 0 AND old.owner IS NOT NULL) + (new.done = 0 AND new.owner IS NOT NULL),
    done = done - (old.done = 1 AND old.dead = 0) + (new.done = 1 AND new.dead = 0),
    dead = dead - (old.dead = 1) + (new.dead = 1)
  WHERE queue = new.queue;
END;

-- No verb moves a job to another queue; plain SQL that does is counted too.
CREATE TRIGGER jobs_count_requeue AFTER UPDATE OF queue ON jobs
WHEN old.queue <> new.queue
BEGIN
  UPDATE queue_counts SET
    waiting = waiting - (old.done = 0 AND old.owner IS NULL), held = held - (old.done = 0 AND old.owner IS NOT NULL),
    done = done - (old.done = 1 AND old.dead = 0), dead = dead - (old.dead = 1)
  WHERE queue = old.queue;
  DELETE FROM queue_counts WHERE queue = old.queue AND waiting = 0 AND held = 0 AND done = 0 AND dead = 0;
  INSERT INTO queue_counts (queue, waiting, held, done, dead)
  VALUES (new.queue, new.done = 0 AND new.owner IS NULL, new.done = 0 AND new.owner IS NOT NULL, new.done = 1 AND new.dead = 0, new.dead = 1)
  ON CONFLICT (queue) DO UPDATE SET
    waiting = waiting + excluded.waiting, held = held + excluded.held, done = done + excluded.done, dead = dead + excluded.dead;
END;

CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs
BEGIN
  UPDATE queue_counts SET
    waiting = waiting - (old.done = 0 AND old.owner IS NULL), held = held - (old.done = 0 AND old.owner IS NOT NULL),
    done = done - (old.done = 1 AND old.dead = 0), dead = dead - (old.dead = 1)
  WHERE queue = old.queue;
  DELETE FROM queue_counts WHERE queue = old.queue AND waiting = 0 AND held = 0 AND done = 0 AND dead = 0;
END;

-- What depends on the time asked is read from index ranges of one queue:
-- scheduled among the waiting jobs (run_at ahead), and the expired leases
-- among the held ones (until passed), which the cron ends every minute.
CREATE INDEX jobs_waiting_by_run_at ON jobs (queue, run_at) WHERE done = 0 AND owner IS NULL;
CREATE INDEX jobs_held_by_until ON jobs (queue, until) WHERE done = 0 AND owner IS NOT NULL;

-- Refusals per queue and minute (at / 60000), for "the last hour": the stats
-- add up at most 60 rows a queue. A queue's rows older than an hour are
-- removed as its new refusals come in.
CREATE TABLE refusal_minutes (
  queue     TEXT    NOT NULL,
  minute    INTEGER NOT NULL,
  refusals  INTEGER NOT NULL,
  PRIMARY KEY (queue, minute)
);

-- The refusals already recorded, of the hour before the latest one.
INSERT INTO refusal_minutes (queue, minute, refusals)
SELECT queue, at / 60000, count(*) FROM events
WHERE kind = 'refused' AND at >= (SELECT max(at) FROM events WHERE kind = 'refused') - 3600000
GROUP BY queue, at / 60000;

DROP TRIGGER events_count_refusal;
CREATE TRIGGER events_count_refusal AFTER INSERT ON events WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, 1)
  ON CONFLICT (queue) DO UPDATE SET total = total + 1;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.at / 60000, 1)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + 1;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.at / 60000 - 60;
END;

-- The refusals of the last hour were counted from this index; the minutes above replace it.
DROP INDEX events_refused;
