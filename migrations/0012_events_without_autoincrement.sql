-- A cheaper history for the hot path (the runner's claim -> complete writes two
-- events a job): `events.seq` without AUTOINCREMENT. AUTOINCREMENT keeps the
-- highest seq ever in sqlite_sequence, a row rewritten by every insert; a
-- plain INTEGER PRIMARY KEY is the highest seq present plus one (about 5 % of
-- the store's claim -> completeMany cycle). So a seq could be used again only
-- after every newer event was purged: the whole history older than the
-- retention and nothing since. Nothing relies on seqs across jobs; a job's
-- history pages by `seq > cursor` within the job, its new events always
-- above its own, and a re-used id starts its history after its `deleted`
-- event, which outlives the job by the retention.
--
-- SQLite cannot drop AUTOINCREMENT from a table: the table is built again
-- (https://sqlite.org/lang_altertable.html#otheralter), every event kept with
-- its seq, with the triggers that write to it dropped first, so that the
-- rename does not meet them, and all of them created again as they were.
DROP TRIGGER jobs_event_enqueued;
DROP TRIGGER jobs_event_transition;

CREATE TABLE events_rebuilt (
  seq           INTEGER PRIMARY KEY,
  job_id        TEXT    NOT NULL,
  queue         TEXT    NOT NULL,
  at            INTEGER NOT NULL,
  kind          TEXT    NOT NULL,  -- a transition, or 'refused' for a refused write with a lease
  action        TEXT,              -- refused: renew, complete, release or fail
  owner         TEXT,              -- who acted; refused: the owner presented
  fence         INTEGER,           -- the fence acted with; refused: the fence presented
  current_owner TEXT,              -- refused: the job's owner and fence when it was refused
  current_fence INTEGER,
  error         TEXT,              -- failed, expired, dead: why
  count         INTEGER NOT NULL DEFAULT 1,
  last_at       INTEGER,
  progress      TEXT
);
INSERT INTO events_rebuilt (seq, job_id, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at, progress)
SELECT seq, job_id, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at, progress FROM events;
DROP TABLE events;
ALTER TABLE events_rebuilt RENAME TO events;

-- The indexes of migrations/0002, 0005 and 0007, as they were.
CREATE INDEX events_by_job ON events (job_id, seq);
CREATE UNIQUE INDEX events_renewed_once ON events (job_id, fence, owner) WHERE kind = 'renewed';
CREATE UNIQUE INDEX events_refused_once ON events (job_id, fence, owner, action, current_fence) WHERE kind = 'refused';
CREATE INDEX events_deleted ON events (at) WHERE kind = 'deleted';

-- The refusal counters of migrations/0004 and 0005, as they were.
CREATE TRIGGER events_count_refusal AFTER INSERT ON events WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, 1)
  ON CONFLICT (queue) DO UPDATE SET total = total + 1;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.at / 60000, 1)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + 1;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.at / 60000 - 60;
END;
CREATE TRIGGER events_count_folded_refusal AFTER UPDATE OF count ON events WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, new.count - old.count)
  ON CONFLICT (queue) DO UPDATE SET total = total + excluded.total;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.last_at / 60000, new.count - old.count)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + excluded.refusals;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.last_at / 60000 - 60;
END;

-- The transitions of migrations/0002 and 0010, as they were.
CREATE TRIGGER jobs_event_enqueued AFTER INSERT ON jobs
BEGIN
  INSERT INTO events (job_id, queue, at, kind) VALUES (new.id, new.queue, new.created_at, 'enqueued');
END;

CREATE TRIGGER jobs_event_transition AFTER UPDATE OF last_event ON jobs
WHEN new.last_event IS NOT 'cancelled'
BEGIN
  -- A claim that takes over an expired lease records that lease's expiry first.
  INSERT INTO events (job_id, queue, at, kind, owner, fence, error)
  SELECT new.id, new.queue, new.updated_at, 'expired', old.owner, old.fence, new.last_error
  WHERE new.last_event = 'claimed' AND old.owner IS NOT NULL;

  INSERT INTO events (job_id, queue, at, kind, owner, fence, error, progress)
  VALUES (
    new.id, new.queue, new.updated_at, new.last_event,
    CASE WHEN new.last_event = 'claimed' THEN new.owner ELSE old.owner END,
    new.fence,
    CASE WHEN new.last_event IN ('failed', 'expired', 'dead') THEN new.last_error END,
    CASE WHEN new.last_event = 'renewed' THEN new.progress END
  )
  ON CONFLICT (job_id, fence, owner) WHERE kind = 'renewed'
  DO UPDATE SET count = count + 1, at = min(at, excluded.at), last_at = max(coalesce(last_at, at), excluded.at), progress = excluded.progress;
END;
